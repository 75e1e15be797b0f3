"""``thread/list`` from the thread index, through the real daemon: pages, restarts, repair, ``cwd: null``.

The 2,000 threads are written directly in the daemon's on-disk record format before it starts (starting each
through the protocol would only slow the test down); the index is then built, kept and repaired by the daemon.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import Daemon, DaemonError, running_daemon

pytestmark = pytest.mark.daemon

THREADS = 2000


def write_threads(data_dir: Path, count: int, prefix: str = "thr_") -> list[dict[str, Any]]:
    """Thread records as the daemon writes them; every fifth pair shares a createdAt (ties break by id)."""
    folder = data_dir / "threads"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    views = []
    for n in range(count):
        second = n - n % 2 if n % 5 == 0 else n
        record = {
            "version": 1,
            "id": f"{prefix}{n * 7919 % 100003:06d}",
            "name": f"t{n}",
            "cwd": None if n % 3 else f"/work/{n}",
            "createdAt": f"2026-01-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000Z",
            "status": "archived" if n % 11 == 0 else "active",
            "mcpServers": {"fx": {"command": "x"}} if n % 2 else {},
            "allowedTools": None,
            "disabledTools": None,
        }
        (folder / f"{record['id']}.json").write_text(json.dumps(record))
        views.append({
            "id": record["id"], "name": record["name"], "cwd": record["cwd"], "createdAt": record["createdAt"],
            "status": record["status"], "servers": sorted(record["mcpServers"]),
        })
    return sorted(views, key=lambda v: (v["createdAt"], v["id"]), reverse=True)


def list_all(daemon: Daemon, limit: int) -> list[dict[str, Any]]:
    threads: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": limit}
        if cursor is not None:
            params["cursor"] = cursor
        page = daemon.request("thread/list", params)
        assert len(page["data"]) <= limit
        threads.extend(page["data"])
        cursor = page.get("nextCursor")
        if cursor is None:
            return threads


def test_paging_over_2000_threads_survives_restarts_and_repairs(data_dir: Path) -> None:
    expected = write_threads(data_dir, THREADS)
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        assert list_all(daemon, 300) == expected
        assert daemon.request("thread/list", {"limit": 1000})["data"] == expected[:1000]
        # Paging is by (createdAt, id): a thread started between two pages neither shifts nor repeats one.
        first = daemon.request("thread/list", {"limit": 50})
        started = daemon.request("thread/start", {"name": "new"})["thread"]
        second = daemon.request("thread/list", {"limit": 50, "cursor": first["nextCursor"]})
        assert first["data"] + second["data"] == expected[:100]
        assert daemon.request("thread/list", {"limit": 1})["data"] == [started]
        archived = daemon.request("thread/archive", {"threadId": expected[5]["id"]})["thread"]
        assert archived["status"] == "archived"
        with pytest.raises(DaemonError) as err:
            daemon.request("thread/list", {"cursor": "not a cursor"})
        assert err.value.reason == "invalidParams"
        assert daemon.close() == 0

    after = [started, *expected]
    after[6] = archived
    index = data_dir / "threads" / "index.jsonl"
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        assert list_all(daemon, 700) == after
        # A thread not loaded yet is read from its file.
        read = daemon.request("thread/read", {"threadId": expected[1234]["id"]})
        assert read["thread"] == expected[1234] and read["facts"] == []

    # A corrupt line in the middle: the index is rebuilt from the thread files.
    lines = index.read_bytes().splitlines(keepends=True)
    index.write_bytes(b"".join([*lines[:10], b"{garbage\n", *lines[10:]]))
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        assert list_all(daemon, 1000) == after

    # Missing index, a thread file the index never heard of (a crash between the two writes), a torn last line.
    index.unlink()
    extra = write_threads(data_dir.parent / "extra", 1, prefix="thr_x")[0]
    (data_dir.parent / "extra" / "threads" / f"{extra['id']}.json").rename(data_dir / "threads" / f"{extra['id']}.json")
    after = sorted([*after, extra], key=lambda v: (v["createdAt"], v["id"]), reverse=True)
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        assert list_all(daemon, 1000) == after
    with index.open("ab") as handle:
        handle.write(b'{"id": "thr_torn"')
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        assert list_all(daemon, 1000) == after
        appended = daemon.request("thread/start", {})["thread"]
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        assert daemon.request("thread/list", {"limit": 2})["data"] == [appended, started]


def test_thread_start_without_cwd_records_null(data_dir: Path) -> None:
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        thread = daemon.request("thread/start", {})["thread"]
        assert "cwd" in thread and thread["cwd"] is None
        named = daemon.request("thread/start", {"cwd": "/srv/project"})["thread"]
        assert named["cwd"] == "/srv/project"
    assert json.loads((data_dir / "threads" / f"{thread['id']}.json").read_text())["cwd"] is None
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        assert daemon.request("thread/read", {"threadId": thread["id"]})["thread"]["cwd"] is None
        assert {t["id"]: t["cwd"] for t in daemon.request("thread/list")["data"]} == {
            thread["id"]: None,
            named["id"]: "/srv/project",
        }
