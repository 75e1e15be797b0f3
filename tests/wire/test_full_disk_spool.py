"""A deaf client on a full data-dir disk (SPEC §1, §5): answers that no longer fit in the spool wait in memory in
order, no new request adds to them (past 8 MiB of unsent output one is ``overloaded``, and is read to be told so
however much the answers held weigh; past 1 MiB of those refusals input is not read until the client reads),
every answer arrives whole once the client reads, and the memory comes back. The results' own archive is full
too: those answer with ``archiveError: "storageFull"``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.proc_status import memory_kib
from tests.wire.test_backpressure import (
    BIG_TEXT,
    MIB,
    RETURNED_WITHIN,
    _thread_with_fixture,
    _wait_input_consumed,
    pausable_daemon,
)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a tmpfs mount, RSS from /proc")
DISK = "48m"
CALLS = 40
"""About 156 MiB of answers for a 48 MiB disk: most of them cannot wait on it."""


def _wait_full(disk: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while (free := os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize) > 4 * MIB:
        assert time.monotonic() < deadline, f"the disk never filled ({free} bytes free)"
        time.sleep(0.05)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK},mode=0700", "tmpfs", str(mount)],
                             capture_output=True, text=True, check=False)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs for the data dir: {mounted.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_deaf_client_on_a_full_disk_loses_no_answer_and_the_memory_comes_back(small_disk: Path) -> None:
    data_dir = small_disk / "data"
    data_dir.mkdir()
    with pausable_daemon(data_dir) as (process, client, lines):
        thread_id = _thread_with_fixture(client)
        before, _ = memory_kib(process.pid)
        lines.reading.clear()
        params = {"threadId": thread_id, "server": "fx", "tool": "big", "arguments": {"bytes": BIG_TEXT}}
        ids = [client.start_request("mcpServer/tool/call", params, request_id=f"big-{i}") for i in range(CALLS)]
        _wait_input_consumed(process)
        _wait_full(small_disk)  # the spool and the archives took the disk: the rest waits in memory
        late = client.start_request("mcpServer/list", {}, request_id="late")
        lines.reading.set()
        answers = [client.wait_response(request_id, timeout=300) for request_id in ids]
        assert [a.get("error") for a in answers] == [None] * CALLS
        assert all(a["result"]["content"][0]["text"] == "x" * BIG_TEXT for a in answers), "every answer, whole"
        full = [a for a in answers if a["result"]["projection"].get("archiveError") == "storageFull"]
        assert full, "the archive filled up too"
        assert client.wait_response(late)["error"]["data"]["reason"] == "overloaded", "a new request while deaf"
        assert client.request("mcpServer/list", {})["data"] == [], "serving again once the client read"
        after, _ = memory_kib(process.pid)
        assert (after - before) * 1024 < RETURNED_WITHIN, f"RSS stayed {(after - before) // 1024} MiB above"
        print(json.dumps({"answers": CALLS, "storageFull": len(full), "rss_after_mib": (after - before) // 1024}))
