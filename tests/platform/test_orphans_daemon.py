"""No stdio child outlives the daemon without the parent-death signal (SPEC §10): the child watcher alone, as on
macOS, tested on Linux with that signal switched off."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.daemon_client import ROOT, JsonLinesClient, running_daemon
from tests.support.fixtures import script

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="/proc and process groups as Linux shows them")
WATCHER_ONLY = {"MCP_APP_SERVER_PARENT_DEATH_SIGNAL": "off"}


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None


def _gone(pid: int) -> bool:
    """Dead, or a zombie waiting for its new parent to reap it."""
    fields = _stat(pid)
    return fields is None or fields[0] in ("Z", "X")


def _wait_gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    """The pids still alive after ``timeout`` (polled: the kill comes from another process)."""
    deadline = time.monotonic() + timeout
    while (alive := [pid for pid in pids if not _gone(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def _children(pid: int) -> dict[int, str]:
    """The live children of ``pid`` and their command lines."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) and int(fields[1]) == pid:
            found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    return found


def _start_family(daemon: JsonLinesClient, tmp_path: Path, name: str) -> tuple[int, int]:
    """A stdio server that leaves a grandchild in its group; returns (server pid, grandchild pid)."""
    pid_file = tmp_path / f"{name}.pid"
    argv = script("spawn_grandchild.py")
    config = {"command": argv[0], "args": argv[1:], "env": {"FIXTURE_PID_FILE": str(pid_file)}}
    daemon.request("mcpServer/create", {"name": name, "config": config})
    daemon.request("mcpServer/start", {"name": name}, timeout=60)
    grandchild = int(pid_file.read_text())
    fields = _stat(grandchild)
    assert fields is not None
    return int(fields[1]), grandchild


def _watcher_of(daemon: int) -> int:
    watchers = [pid for pid, cmdline in _children(daemon).items() if "watch-children" in cmdline]
    assert len(watchers) == 1, _children(daemon)
    return watchers[0]


def test_sigkill_of_the_daemon_leaves_no_child_nor_grandchild(data_dir: Path, tmp_path: Path) -> None:
    with running_daemon(data_dir, env=WATCHER_ONLY) as daemon:
        daemon.initialize()
        family = [*_start_family(daemon, tmp_path, "one"), *_start_family(daemon, tmp_path, "two")]
        stopped = _start_family(daemon, tmp_path, "three")
        daemon.request("mcpServer/stop", {"name": "three"}, timeout=30)
        assert _wait_gone(list(stopped)) == []
        watcher = _watcher_of(daemon.process.pid)
        daemon.process.kill()
        daemon.process.wait()
        assert _wait_gone(family) == [], "a stdio child outlived SIGKILL of the daemon"
        assert _wait_gone([watcher]) == [], "the watcher outlived its work"


def test_sigkill_of_the_daemons_whole_process_group(data_dir: Path, tmp_path: Path) -> None:
    """A host that kills the daemon's process group: the watcher has a session of its own and is not in it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "app_server", "--data-dir", str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT), **WATCHER_ONLY},
        cwd=ROOT,
        start_new_session=True,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        client = JsonLinesClient(process.stdout, process.stdin)
        client.initialize()
        family = list(_start_family(client, tmp_path, "one"))
        watcher = _watcher_of(process.pid)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        assert _wait_gone(family) == [], "a stdio child outlived SIGKILL of the daemon's group"
        assert _wait_gone([watcher]) == []
        client.assert_conforming()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()


def test_a_daemon_that_exits_takes_its_watcher_along(data_dir: Path, tmp_path: Path) -> None:
    with running_daemon(data_dir, env=WATCHER_ONLY) as daemon:
        daemon.initialize()
        family = list(_start_family(daemon, tmp_path, "one"))
        watcher = _watcher_of(daemon.process.pid)
        assert daemon.close() == 0
    assert _wait_gone([*family, watcher]) == []
