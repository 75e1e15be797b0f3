"""Shutdown ends in ≤ 5 s with exit 0 and no child left, even when the client stopped reading; SIGKILL of the
daemon leaves no stdio child behind (Linux parent-death signal)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.daemon_client import ROOT, JsonLinesClient, running_daemon, unix_client
from testing.fixtures import script

pytestmark = pytest.mark.daemon

SHUTDOWN_BOUND_S = 5.0
SLACK_S = 2.0
"""Process start-up and a loaded CI machine; the daemon's own budget is 1 + 2 s (+ flush alongside)."""
linux_only = pytest.mark.skipif(sys.platform != "linux", reason="parent-death signal and /proc are Linux")


def _gone(pid: int) -> bool:
    """Dead or a zombie waiting for its new parent to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _wait_gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while not _gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def socket_path() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="mas-", dir="/tmp") as tmp:
        yield Path(tmp) / "d.sock"


def _spawn(data_dir: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "app_server", "--data-dir", str(data_dir), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )


def _start_stubborn_child(client: JsonLinesClient, pid_file: Path) -> int:
    """A stdio MCP server that ignores stdin EOF and SIGTERM, started through the management owner."""
    argv = script("ignore_eof.py")
    config = {"command": argv[0], "args": argv[1:], "env": {"FIXTURE_PID_FILE": str(pid_file)}}
    client.request("mcpServer/create", {"name": "stubborn", "config": config})
    client.request("mcpServer/start", {"name": "stubborn"}, timeout=60)
    pid = int(pid_file.read_text())
    assert not _gone(pid)
    return pid


def _wait_socket(path: Path, process: subprocess.Popen[bytes]) -> None:
    """The socket is bound before the daemon reads stdin; a request on stdio makes sure of it."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b'{"id":0,"method":"initialize","params":{"clientInfo":{"name":"t","version":"0"}}}\n')
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["id"] == 0
    assert path.is_socket()


@linux_only
@pytest.mark.parametrize("how", ["eof then SIGTERM", "SIGTERM alone", "SIGTERM twice"])
def test_sigterm_with_3000_unread_responses(data_dir: Path, socket_path: Path, tmp_path: Path, how: str) -> None:
    process = _spawn(data_dir, "--listen", f"unix:{socket_path}")
    assert process.stdin is not None
    try:
        _wait_socket(socket_path, process)
        with unix_client(socket_path) as other:
            other.initialize()
            child = _start_stubborn_child(other, tmp_path / "child.pid")
        requests = b"".join(b'{"id":%d,"method":"mcpServer/list"}\n' % i for i in range(1, 3001))
        process.stdin.write(requests)  # stdout is never read again
        if how == "eof then SIGTERM":
            process.stdin.close()
        else:
            process.stdin.flush()
        process.send_signal(signal.SIGTERM)
        if how == "SIGTERM twice":
            process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        assert process.wait(timeout=SHUTDOWN_BOUND_S + SLACK_S) == 0
        assert time.monotonic() - started < SHUTDOWN_BOUND_S + SLACK_S
        assert _wait_gone(child, timeout=5), "the MCP child outlived the daemon"
        assert not socket_path.exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()


@linux_only
@pytest.mark.parametrize("event_loop", ["auto", "asyncio"])
def test_sigterm_with_tool_calls_in_flight(data_dir: Path, tmp_path: Path, event_loop: str) -> None:
    """101 tool calls still running: they get a short grace, then are cancelled and answered; exit 0."""
    with running_daemon(data_dir, args=("--event-loop", event_loop)) as daemon:
        daemon.initialize()
        argv = script("fixture_server.py")
        thread_id = daemon.request(
            "thread/start", {"name": "t", "mcpServers": {"fx": {"command": argv[0], "args": argv[1:]}}}
        )["thread"]["id"]
        call = {"threadId": thread_id, "server": "fx", "tool": "sleep", "arguments": {"ms": 60_000}}
        first = daemon.start_request("mcpServer/tool/call", call)
        for _ in range(100):
            daemon.start_request("mcpServer/tool/call", call)
        daemon.send_raw(b'{"id":"last","method":"mcpServer/list"}\n')
        daemon.wait_response("last", timeout=60)  # every call has been read and is in flight
        daemon.process.send_signal(signal.SIGTERM)
        assert daemon.process.wait(timeout=SHUTDOWN_BOUND_S + SLACK_S) == 0
        daemon.join()
        assert daemon.wait_response(first, timeout=1)["error"]["data"]["reason"] in ("cancelled", "connectionLost")


@linux_only
def test_sigkill_of_the_daemon_leaves_no_stdio_child(data_dir: Path, tmp_path: Path) -> None:
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        child = _start_stubborn_child(daemon, tmp_path / "child.pid")
        daemon.process.kill()
        daemon.process.wait()
        assert _wait_gone(child), "a child that ignores stdin EOF survived SIGKILL of the daemon"


def test_eof_with_a_client_that_reads_exits_zero(data_dir: Path) -> None:
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        ids = [daemon.start_request("mcpServer/list") for _ in range(200)]
        assert daemon.close(timeout=SHUTDOWN_BOUND_S + SLACK_S) == 0
        daemon.join()
        for request_id in ids:
            assert daemon.wait_response(request_id, timeout=1)["result"] == {"data": []}


def test_a_stop_that_hangs_still_ends_the_process_with_its_stacks_and_children_gone(tmp_path: Path) -> None:
    """The last resort behind the bounded phases: a stop whose work never returns (a worker thread that cannot be
    cancelled) still ends with exit 0 at ``LAST_RESORT_S``, says where it hung, and kills what it was handed."""
    program = (
        "import subprocess, threading, time\n"
        "from app_server.process import shutdown\n"
        "child = subprocess.Popen(['sleep', '600'])\n"
        "print(child.pid, flush=True)\n"
        "shutdown.arm_last_resort(child.kill)\n"
        "def hang_here_forever(): threading.Event().wait()\n"
        "hang_here_forever()\n"
    )
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=ROOT, timeout=30)
    took = time.monotonic() - began
    assert done.returncode == 0
    assert took < SHUTDOWN_BOUND_S + SLACK_S
    first, *rest = done.stderr.splitlines()
    assert json.loads(first)["event"] == "stop_overran"
    assert any("hang_here_forever" in line for line in rest), done.stderr
    assert _wait_gone(int(done.stdout.split()[0]), timeout=5), "the child handed to the last resort outlived it"
