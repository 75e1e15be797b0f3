"""A server's process number is the daemon's until the daemon is done with it (SPEC §5, §10): a server that died
is signalled, and forgotten by the child watcher, before its number can go to another process, so a process that
takes the number later (forced here through ``ns_last_pid``) is never signalled by the daemon nor its watcher. A
double-forked grandchild comes back to the daemon (a child subreaper) and is stopped at exit."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from testing.daemon_client import running_daemon
from testing.process_tree import children, start_family, started, stat, wait_gone, watcher_of

NS_LAST_PID = Path("/proc/sys/kernel/ns_last_pid")
# ns_last_pid is the machine's: a test beside this one would take the numbers it forces (make test runs it alone).
pytestmark = [pytest.mark.daemon, pytest.mark.serial, pytest.mark.skipif(
    sys.platform != "linux" or not os.access(NS_LAST_PID, os.W_OK), reason="forcing a pid needs ns_last_pid"
)]


def take_pid(wanted: int, timeout: float) -> subprocess.Popen[bytes] | None:
    """A session leader (so ``killpg(wanted)`` would reach it) started with pid ``wanted`` as soon as the number
    is free; None when it never was within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        NS_LAST_PID.write_text(str(wanted - 1))
        process = subprocess.Popen(["sleep", "600"], start_new_session=True)
        if process.pid == wanted:
            return process
        process.kill()
        process.wait()
        time.sleep(0.005)  # the number is still held (a zombie): try again
    return None


def test_a_reused_pid_is_never_signalled_by_the_daemon_or_its_watcher(data_dir: Path, tmp_path: Path) -> None:
    """The server dies while a grandchild of its (in a session of its own) keeps its stdout open, so the daemon
    does not see the death until it stops the server: a process that takes the dead server's number meanwhile
    must live through that stop and through the watcher's sweep when the daemon is killed."""
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        keeps = {"FIXTURE_GRANDCHILD_STDOUT": "1"}
        server, grandchild = start_family(daemon, tmp_path, "fx", setsid=True, env=keeps)
        watcher = watcher_of(daemon.process.pid)
        taken: list[subprocess.Popen[bytes] | None] = []
        try:
            os.kill(server, signal.SIGKILL)
            taking = threading.Thread(target=lambda: taken.append(take_pid(server, 30)))
            taking.start()
            assert wait_gone([server]) == []  # dead (a zombie while the daemon holds it, or reaped)
            daemon.request("mcpServer/stop", {"name": "fx"}, timeout=30)
            taking.join(40)
            stranger = taken[0]
            assert stranger is not None, "the dead server's number never became free"
            assert stranger.poll() is None, "the daemon signalled a process that took its server's number"
            daemon.process.kill()  # the watcher now sweeps every group it still holds
            daemon.process.wait()
            assert wait_gone([watcher]) == []
            assert stranger.poll() is None, "the watcher killed a process it was never told about"
        finally:
            for process in taken:
                if process is not None:
                    process.kill()
                    process.wait()
            with contextlib.suppress(ProcessLookupError):
                os.kill(grandchild, signal.SIGKILL)


def test_a_double_forked_grandchild_comes_back_to_the_daemon_and_is_stopped_at_exit(
    data_dir: Path, tmp_path: Path
) -> None:
    """It stays its server's child (the server is a subreaper). When the server dies it is swept with it, or, when
    the kernel re-parented it before the daemon looked, it is the daemon's (a subreaper too) until the daemon's exit
    stops it."""
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        server, grandchild = start_family(daemon, tmp_path, "away", daemonize=True)
        assert server in children(daemon.process.pid), "the grandchild is no child of its server"
        born = {grandchild: started(grandchild)}
        os.kill(server, signal.SIGKILL)
        assert wait_gone([server]) == []
        fields = _adopted(grandchild, born[grandchild], daemon.process.pid)
        if fields is not None:
            assert int(fields[1]) == daemon.process.pid, "the daemon is no child subreaper"
            assert int(fields[3]) != int(stat(daemon.process.pid)[3])  # type: ignore[index]  # another session
        assert daemon.close() == 0
    assert wait_gone(born) == []


def _adopted(pid: int, born: int, daemon: int, timeout: float = 15.0) -> list[str] | None:
    """``pid``'s fields once it is the daemon's child, or None when it went first (swept with its server). Its
    first parent, the daemonizer's middle process, may still be exiting when the server dies: until then it is
    that process's child, so the test waits for the kernel's re-parenting rather than reading it once."""
    deadline = time.monotonic() + timeout
    while True:
        fields = stat(pid)
        if fields is None or fields[0] in ("Z", "X") or int(fields[19]) != born:
            return None
        if int(fields[1]) == daemon or time.monotonic() >= deadline:
            return fields
        time.sleep(0.05)


def test_a_frozen_server_is_woken_to_handle_its_stop_signal(data_dir: Path, tmp_path: Path) -> None:
    """A server frozen by SIGSTOP (as the parent-death signal leaves it while a watcher runs) gets SIGCONT with its
    SIGTERM: its own handler runs (a frozen process would only ever be killed), and nothing stays stopped."""
    term_file = tmp_path / "term"
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        server, grandchild = start_family(daemon, tmp_path, "frozen", env={"FIXTURE_TERM_FILE": str(term_file)})
        os.killpg(server, signal.SIGSTOP)
        daemon.request("mcpServer/stop", {"name": "frozen"}, timeout=30)
        assert wait_gone([server, grandchild]) == []
    assert term_file.read_text() == "SIGTERM\n", "the frozen server never ran its SIGTERM handler"
