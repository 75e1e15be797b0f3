"""The sealed data dir (SPEC §5) and app-config reads that never block (SPEC §1), through the real daemon.

Modes after a real session, planted symlinks refused with ``unsafePath`` (their targets untouched), FIFOs and
``/proc/self/fd/0`` refused with ``notARegularFile`` while the connection keeps answering, and the temp files
of a killed daemon removed at start.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.daemon_client import Daemon, DaemonError, running_daemon
from testing.fixtures import fixture_config

pytestmark = pytest.mark.daemon

START_TIMEOUT = 40.0
CODEX_TOML = '# mine\nmodel = "o4"\n'
PRECIOUS = b"precious bytes outside the data dir\n"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    (folder / ".codex").mkdir(parents=True)
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def app_env(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "CODEX_HOME": str(home / ".codex")}


@pytest.fixture
def app_daemon(data_dir: Path, home: Path) -> Iterator[Daemon]:
    with running_daemon(data_dir, env=app_env(home)) as d:
        d.initialize()
        yield d


def error_of(daemon: Daemon, method: str, params: dict[str, object]) -> DaemonError:
    with pytest.raises(DaemonError) as err:
        daemon.request(method, params, timeout=START_TIMEOUT)
    return err.value


def start_ready_thread(daemon: Daemon) -> str:
    thread_id: str = daemon.request("thread/start", {"mcpServers": {"fx": fixture_config()}})["thread"]["id"]
    daemon.wait_notification(
        "mcpServer/startupStatus/updated",
        lambda p: p["threadId"] == thread_id and p["name"] == "fx" and p["status"] == "ready",
        timeout=START_TIMEOUT,
    )
    return thread_id


def read_resource(daemon: Daemon, thread_id: str) -> dict[str, object]:
    params = {"threadId": thread_id, "server": "fx", "uri": "fixture://static/hello"}
    result: dict[str, object] = daemon.request("mcpServer/resource/read", params, timeout=START_TIMEOUT)
    return result


def plant(link: Path, target: Path) -> Path:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return target


def untouched(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


# --------------------------------------------------------------------------------------------- modes


def test_every_folder_0700_and_every_file_0600_after_a_session(data_dir: Path, home: Path) -> None:
    # An older daemon left a world-readable backups folder and lock file: both are sealed at start.
    (data_dir / "backups").mkdir(mode=0o755)
    (data_dir / "backups").chmod(0o755)
    (data_dir / ".mcps.json.lock").touch(mode=0o644)
    (data_dir / ".mcps.json.lock").chmod(0o644)
    data_dir.chmod(0o755)
    (home / ".codex" / "config.toml").write_text(CODEX_TOML)
    with running_daemon(data_dir, env=app_env(home)) as daemon:
        daemon.initialize()
        daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config(apps={"codex": True})})
        daemon.request("mcpServer/create", {"name": "off", "config": {"command": "x", "enabled": False}})
        thread_id = start_ready_thread(daemon)
        read_resource(daemon, thread_id)
        result = daemon.request("mcpServer/syncAllToLive", {"apps": ["codex"]})["results"][0]
        assert result["changed"] and "error" not in result, result
        assert daemon.close() == 0

    seen: dict[str, int] = {}
    for folder, dirs, files in os.walk(data_dir):
        for name in dirs + files:
            st = os.lstat(Path(folder, name))
            rel = str(Path(folder, name).relative_to(data_dir))
            assert not stat.S_ISLNK(st.st_mode), rel
            seen[rel] = stat.S_IMODE(st.st_mode)
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    wrong = {rel: oct(mode) for rel, mode in seen.items() if mode != (0o700 if (data_dir / rel).is_dir() else 0o600)}
    assert wrong == {}
    expected = {
        "mcps.json", ".mcps.json.lock", "backups", "backups/codex", "locks", "sync-ledger.json",
        "sync-ledger.json.lock", "threads", f"threads/{thread_id}.json", f"threads/{thread_id}.facts.jsonl",
        "threads/index.jsonl",
    }
    assert expected <= seen.keys(), expected - seen.keys()
    assert any(rel.startswith("backups/codex/") for rel in seen) and any(rel.startswith("locks/") for rel in seen)


# ------------------------------------------------------------------------------------------ symlinks


def test_symlinked_store_and_lock_are_refused_and_never_written_through(data_dir: Path, outside: Path) -> None:
    victim = plant(data_dir / "mcps.json", outside / "victim.json")
    victim.write_bytes(PRECIOUS)
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        err = error_of(daemon, "mcpServer/create", {"name": "a", "config": {"command": "x"}})
        assert (err.code, err.reason) == (-32012, "unsafePath")
        assert error_of(daemon, "mcpServer/list", {}).reason == "unsafePath"
        assert victim.read_bytes() == PRECIOUS and (data_dir / "mcps.json").is_symlink()

        # The host removes the planted link: the same daemon serves again; then a planted lock file is refused.
        (data_dir / "mcps.json").unlink()
        daemon.request("mcpServer/create", {"name": "a", "config": {"command": "x"}})
        (data_dir / ".mcps.json.lock").unlink()
        lock_victim = plant(data_dir / ".mcps.json.lock", outside / "lock-victim")
        lock_victim.write_bytes(PRECIOUS)
        err = error_of(daemon, "mcpServer/create", {"name": "b", "config": {"command": "x"}})
        assert (err.code, err.reason) == (-32012, "unsafePath")
        assert lock_victim.read_bytes() == PRECIOUS
        assert [s["name"] for s in daemon.request("mcpServer/list")["data"]] == ["a"]
    assert untouched(outside) == {"victim.json": PRECIOUS, "lock-victim": PRECIOUS}


def test_symlinked_facts_file_is_refused(data_dir: Path, outside: Path) -> None:
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        thread_id = start_ready_thread(daemon)
        assert daemon.request("thread/list")["data"][0]["id"] == thread_id
        victim = plant(data_dir / "threads" / f"{thread_id}.facts.jsonl", outside / "facts")
        victim.write_bytes(PRECIOUS)
        params = {"threadId": thread_id, "server": "fx", "uri": "fixture://static/hello"}
        err = error_of(daemon, "mcpServer/resource/read", params)
        assert (err.code, err.reason) == (-32012, "unsafePath")
        assert victim.read_bytes() == PRECIOUS
        # A folder on the way is checked too: threads/ itself swapped for a link to the outside.
        (data_dir / "threads").rename(data_dir / "threads-real")
        plant(data_dir / "threads", outside)
        assert error_of(daemon, "mcpServer/resource/read", params).reason == "unsafePath"
        assert daemon.request("thread/list")["data"][0]["id"] == thread_id  # the connection keeps serving
    assert untouched(outside) == {"facts": PRECIOUS}


def test_symlinked_backups_folder_is_refused_and_the_app_file_kept(
    app_daemon: Daemon, data_dir: Path, home: Path, outside: Path
) -> None:
    codex = home / ".codex" / "config.toml"
    codex.write_text(CODEX_TOML)
    plant(data_dir / "backups" / "codex", outside)
    app_daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config(apps={"codex": True})})
    result = app_daemon.request("mcpServer/syncAllToLive", {"apps": ["codex"]})["results"][0]
    assert result["error"]["reason"] == "unsafePath" and not result.get("backupPath")
    assert untouched(outside) == {} and codex.read_text() == CODEX_TOML
    # The whole backups/ folder as a link is refused the same way.
    (data_dir / "backups" / "codex").unlink()
    (data_dir / "backups").rmdir()
    plant(data_dir / "backups", outside)
    result = app_daemon.request("mcpServer/syncAllToLive", {"apps": ["codex"]})["results"][0]
    assert result["error"]["reason"] == "unsafePath"
    assert untouched(outside) == {} and codex.read_text() == CODEX_TOML


# ------------------------------------------------------------------------------ non-regular app files


def test_fifo_and_stdin_paths_are_refused_while_the_connection_serves(app_daemon: Daemon, tmp_path: Path) -> None:
    fifo = tmp_path / "config.fifo"
    os.mkfifo(fifo)
    for path in (str(fifo), "/proc/self/fd/0", str(tmp_path)):
        blocked = app_daemon.start_request("mcpServer/importFromApp", {"app": "cursor", "path": path})
        other = app_daemon.start_request("mcpServer/list")
        assert "data" in app_daemon.wait_response(other)["result"]
        response = app_daemon.wait_response(blocked)
        assert "error" in response, response
        err = DaemonError(response["error"])
        assert (err.code, err.reason, err.data.get("path")) == (-32602, "notARegularFile", path)


def test_sync_refuses_a_fifo_app_config(app_daemon: Daemon, home: Path) -> None:
    os.mkfifo(home / ".codex" / "config.toml")
    app_daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config(apps={"codex": True})})
    for dry_run in (True, False):
        result = app_daemon.request("mcpServer/syncAllToLive", {"apps": ["codex"], "dryRun": dry_run})["results"][0]
        assert result["error"]["reason"] == "notARegularFile" and result["changed"] is False
    assert stat.S_ISFIFO(os.lstat(home / ".codex" / "config.toml").st_mode)


# ------------------------------------------------------------------------------------------ temp files


def test_temp_files_of_a_killed_daemon_are_removed_at_start(data_dir: Path) -> None:
    stale = [
        data_dir / ".mcps.json.0123456789abcdef.tmp",
        data_dir / ".mcps.json.k2_8xq1z.tmp",  # the tempfile.mkstemp name earlier versions used
        data_dir / "threads" / ".thr_a.json.fedcba9876543210.tmp",
        data_dir / "backups" / "codex" / ".20260101T000000000000Z-config.toml.00112233aabbccdd.tmp",
    ]
    fresh = data_dir / ".sync-ledger.json.aabbccddeeff0011.tmp"  # another live daemon may still be writing it
    hour_ago = time.time() - 3600
    for path in [*stale, fresh]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half-written")
    for path in stale:
        os.utime(path, (hour_ago, hour_ago))
    keep = data_dir / "threads" / "notes.tmp"  # not our temp-name pattern
    keep.write_bytes(b"x")
    os.utime(keep, (hour_ago, hour_ago))
    with running_daemon(data_dir) as daemon:
        daemon.initialize()  # answered before the daemon's modules load (process.startup): no data dir access
        daemon.request("mcpServerStatus/list")  # the data dir is sealed before a request that can touch it
        assert [p for p in stale if p.exists()] == []
        assert fresh.exists() and keep.exists()
        daemon.request("mcpServer/create", {"name": "a", "config": {"command": "x"}})
