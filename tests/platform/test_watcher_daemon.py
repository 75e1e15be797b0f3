"""The child watcher under attack (SPEC §10): a full pipe is back-pressure, not the daemon's death; a killed watcher
is replaced; a grandchild that left its server's process group with ``setsid`` is still stopped with the daemon."""

from __future__ import annotations

import fcntl
import os
import signal
import sys
import termios
import time
from pathlib import Path

import pytest

from testing.daemon_client import running_daemon
from testing.process_tree import children, gone, start_family, stat, wait_gone, watcher_of

pytestmark = [
    pytest.mark.daemon,
    pytest.mark.skipif(sys.platform != "linux", reason="/proc and process groups as Linux shows them"),
]
WATCHER_ONLY = {"MCP_APP_SERVER_PARENT_DEATH_SIGNAL": "off"}


def _fill(pipe: int) -> int:
    """Write blank lines (the watcher skips them) into ``pipe`` until it is full; the bytes it took."""
    written = 0
    while True:
        try:
            written += os.write(pipe, b"\n" * 4096)
        except BlockingIOError:
            return written


def _unread(pipe: int) -> int:
    return int.from_bytes(fcntl.ioctl(pipe, termios.FIONREAD, b"\0\0\0\0"), sys.byteorder)


def _wait(condition: object, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.02)
    return bool(condition())  # type: ignore[operator]


def test_a_full_watcher_pipe_kills_no_server(data_dir: Path, tmp_path: Path) -> None:
    """The watcher stopped (SIGSTOP) and its pipe filled: the registrations of servers started meanwhile wait in
    the daemon; once the watcher reads again every server is alive, and each is still killed with the daemon."""
    with running_daemon(data_dir, env=WATCHER_ONLY) as daemon:
        daemon.initialize()
        first = start_family(daemon, tmp_path, "first")
        watcher = watcher_of(daemon.process.pid)
        os.kill(watcher, signal.SIGSTOP)
        assert _wait(lambda: (stat(watcher) or ["?"])[0] == "T"), "the watcher did not stop"
        pipe = os.open(f"/proc/{watcher}/fd/0", os.O_WRONLY | os.O_NONBLOCK)  # the watcher's own pipe, again
        try:
            filled = _fill(pipe)
            later = [*start_family(daemon, tmp_path, "second"), *start_family(daemon, tmp_path, "third")]
            passing = start_family(daemon, tmp_path, "passing")
            daemon.request("mcpServer/stop", {"name": "passing"}, timeout=30)
            assert wait_gone(list(passing)) == []
            assert _unread(pipe) == filled, "the daemon wrote into a full pipe"
            print(f"watcher pipe full at {filled} bytes; 3 registrations and 1 removal waited in the daemon")
            os.kill(watcher, signal.SIGCONT)
            assert _wait(lambda: _unread(pipe) == 0), "the watcher did not read its pipe"
        finally:
            os.close(pipe)
        daemon.request("mcpServer/list")  # a loop pass after the pipe drained: what waited has been written
        assert not gone(watcher), "the watcher took a full pipe for the daemon's death"
        family = [*first, *later]
        assert [pid for pid in family if gone(pid)] == []
        status = {row["name"]: row["runtimeStatus"] for row in daemon.request("mcpServerStatus/list")["data"]}
        assert status == {"first": "connected", "second": "connected", "third": "connected", "passing": "notStarted"}
        daemon.process.kill()
        daemon.process.wait()
        assert wait_gone(family) == [], "a server registered while the pipe was full outlived the daemon"
        assert wait_gone([watcher]) == []


def test_a_killed_watcher_is_replaced_and_still_guards_every_child(data_dir: Path, tmp_path: Path) -> None:
    with running_daemon(data_dir, env=WATCHER_ONLY) as daemon:
        daemon.initialize()
        before = start_family(daemon, tmp_path, "before")
        first = watcher_of(daemon.process.pid)
        os.kill(first, signal.SIGKILL)

        def replaced() -> bool:
            return any("watch-children" in cmd and pid != first for pid, cmd in children(daemon.process.pid).items())

        assert _wait(replaced), "no new watcher after the first one was killed"
        second = watcher_of(daemon.process.pid)
        after = start_family(daemon, tmp_path, "after")
        daemon.process.kill()
        daemon.process.wait()
        assert wait_gone([*before, *after]) == [], "a stdio child outlived the daemon after its watcher was killed"
        assert wait_gone([second]) == []


@pytest.mark.parametrize("path", ["parent-death signal", "watcher alone"])
def test_a_setsid_grandchild_is_stopped_with_the_daemon(data_dir: Path, tmp_path: Path, path: str) -> None:
    """The grandchild is in a session of its own, so no group kill reaches it: the watcher's sweep of the tree
    does (with the parent-death signal, the kernel stops the server first so that the tree is still whole)."""
    env = WATCHER_ONLY if path == "watcher alone" else {}
    with running_daemon(data_dir, env=env) as daemon:
        daemon.initialize()
        server, grandchild = start_family(daemon, tmp_path, "detached", setsid=True)
        server_stat, grandchild_stat = stat(server), stat(grandchild)
        assert server_stat is not None and grandchild_stat is not None
        assert grandchild_stat[3] != server_stat[3], "the grandchild should have its own session"
        watcher = watcher_of(daemon.process.pid)
        daemon.process.kill()
        daemon.process.wait()
        assert wait_gone([server, grandchild]) == [], "a setsid grandchild outlived SIGKILL of the daemon"
        assert wait_gone([watcher]) == []
