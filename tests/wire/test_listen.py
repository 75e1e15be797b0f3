"""``--listen unix:PATH`` rules of SPEC §1, against the real daemon."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from testing.daemon_client import ROOT, JsonLinesClient, running_daemon, unix_client
from testing.proc_status import memory_kib

pytestmark = pytest.mark.daemon

MIB = 1 << 20


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="mas-", dir="/tmp") as tmp:  # sun_path is short
        yield Path(tmp)


def _run_daemon(data_dir: Path, path: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "app_server", "--data-dir", str(data_dir), "--listen", f"unix:{path}"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        timeout=60,
    )


def _refusal(done: subprocess.CompletedProcess[bytes]) -> str:
    assert done.returncode == 2
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_regular_file_at_the_path_is_refused_and_kept(data_dir: Path, socket_dir: Path) -> None:
    path = socket_dir / "notes.txt"
    path.write_text("precious")
    assert "not a socket" in _refusal(_run_daemon(data_dir, path))
    assert path.read_text() == "precious"


def test_a_directory_at_the_path_is_refused(data_dir: Path, socket_dir: Path) -> None:
    assert "not a socket" in _refusal(_run_daemon(data_dir, socket_dir))
    assert socket_dir.is_dir()


def test_a_path_that_cannot_be_bound_is_refused(data_dir: Path, socket_dir: Path) -> None:
    assert "cannot listen" in _refusal(_run_daemon(data_dir, socket_dir / "missing" / "d.sock"))


def test_a_live_daemons_socket_is_refused_and_keeps_serving(data_dir: Path, socket_dir: Path, tmp_path: Path) -> None:
    path = socket_dir / "d.sock"
    with running_daemon(data_dir, args=("--listen", f"unix:{path}")) as first:
        first.initialize()
        other_data = tmp_path / "other"
        assert "already listening" in _refusal(_run_daemon(other_data, path))
        with unix_client(path) as client:
            assert client.initialize()["dataDir"] == str(data_dir)
    assert first.process.returncode == 0
    assert not path.exists(), "the daemon removes its own socket on exit"


def test_a_stale_socket_is_replaced(data_dir: Path, socket_dir: Path) -> None:
    path = socket_dir / "d.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # the file stays; nobody listens
    with running_daemon(data_dir, args=("--listen", f"unix:{path}")) as daemon:
        daemon.initialize()
        with unix_client(path) as client:
            client.initialize()
            assert client.request("mcpServer/list") == {"data": []}


def test_on_exit_only_our_own_socket_is_unlinked(data_dir: Path, socket_dir: Path) -> None:
    path = socket_dir / "d.sock"
    replacement = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with running_daemon(data_dir, args=("--listen", f"unix:{path}")) as daemon:
            daemon.initialize()
            path.unlink()
            replacement.bind(str(path))  # someone else's socket now lives at the path
            replacement.listen()
            assert daemon.close() == 0
        assert path.exists(), "the daemon removed a socket that was not its own"
    finally:
        replacement.close()


def test_at_most_64_socket_connections(data_dir: Path, socket_dir: Path) -> None:
    path = socket_dir / "d.sock"
    with running_daemon(data_dir, args=("--listen", f"unix:{path}")) as daemon, ExitStack() as stack:
        daemon.initialize()
        clients = [stack.enter_context(unix_client(path)) for _ in range(64)]
        for client in clients:
            client.initialize()  # each connection is being served
        extra = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        extra.connect(str(path))
        with extra, extra.makefile("rb") as reader:
            lines = reader.readlines()  # one error line, then the daemon closes the connection
        assert len(lines) == 1
        refusal = json.loads(lines[0])
        assert refusal["id"] is None and refusal["error"]["code"] == -32001
        assert refusal["error"]["data"]["reason"] == "overloaded"
        assert all(client.request("mcpServer/list") == {"data": []} for client in clients)
        stack.pop_all().close()  # the 64 disconnect; the daemon sees each end when it next reads that socket
        assert _served_once_room_is_made(path), "a place freed by a disconnect was never given to a new client"


def _served_once_room_is_made(path: Path, timeout: float = 20.0) -> bool:
    """Whether a new connection is served (its ``initialize`` answered) before ``timeout``; a connection made while
    the daemon has not yet seen the others go is refused ``overloaded`` and tried again."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with unix_client(path) as client:
            try:
                client.initialize()
                return True
            except TimeoutError:
                if not client.eof:
                    raise
    return False


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RSS from /proc")
def test_an_endless_line_is_discarded_while_it_is_read(data_dir: Path, socket_dir: Path) -> None:
    path = socket_dir / "d.sock"
    with running_daemon(data_dir, args=("--listen", f"unix:{path}")) as daemon:
        daemon.initialize()
        with unix_client(path) as client:
            client.initialize()
            _discard_endless_line(daemon.process.pid, client)


def _discard_endless_line(pid: int, client: JsonLinesClient) -> None:
        rss_before, _ = memory_kib(pid)
        chunk = b"x" * MIB
        for _ in range(64):
            client.send_raw(chunk)  # 64 MiB, no newline
        client.send_raw(b"\n")
        answer = client.wait_for(lambda m: "error" in m)
        assert answer["error"]["data"]["reason"] == "messageTooLarge"
        assert client.request("mcpServer/list") == {"data": []}
        _, peak = memory_kib(pid)
        assert (peak - rss_before) < 16 * 1024, f"peak grew by {(peak - rss_before) // 1024} MiB"
