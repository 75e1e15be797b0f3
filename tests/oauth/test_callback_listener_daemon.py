"""A login's loopback callback port under attack by local programs (SPEC §5): idle connections by the thousand
under a low descriptor limit, a head that never ends, a connection that never speaks. The listener keeps few
connections, bounds the head read and outlives ``accept`` failing ``EMFILE``; the login still completes, and so
does the next one."""

from __future__ import annotations

import os
import resource
import selectors
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from scripts.smoke.fixtures.launch import oauth_fixture
from testing.daemon_client import Daemon, running_daemon
from testing.oauth import browse, login

pytestmark = [
    pytest.mark.daemon,
    pytest.mark.skipif(sys.platform != "linux", reason="prlimit and /proc as Linux has them"),
]
IDLE_CONNECTIONS = 1000
SPARE_DESCRIPTORS = 8


@pytest.fixture
def oauth_url() -> Iterator[str]:
    with oauth_fixture() as url:
        yield url


def _callback_port(authorization_url: str) -> int:
    redirect = parse_qs(urlsplit(authorization_url).query)["redirect_uri"][0]
    port = urlsplit(redirect).port
    assert port is not None
    return port


def _open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _wait_logged(daemon: Daemon, event: str, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while event not in daemon.stderr() and time.monotonic() < deadline:
        time.sleep(0.05)
    return event in daemon.stderr()


def _closing_times(connections: list[socket.socket], timeout: float) -> list[float]:
    """Seconds until the daemon closed each connection (it sends nothing before), watched all at once."""
    began = time.monotonic()
    waiting = {connection.fileno(): connection for connection in connections}
    closed: list[float] = []
    with selectors.DefaultSelector() as selector:
        for connection in connections:
            selector.register(connection, selectors.EVENT_READ)
        while waiting and time.monotonic() - began < timeout:
            for key, _ in selector.select(timeout=1):
                connection = waiting.pop(key.fd)
                selector.unregister(connection)
                assert connection.recv(1) == b""
                closed.append(time.monotonic() - began)
    return closed


def _start(daemon: Daemon, oauth_url: str) -> dict[str, str]:
    daemon.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": oauth_url, "oauth": {}}})
    return daemon.request("mcpServer/oauth/login", {"name": "sec"}, timeout=60)  # type: ignore[no-any-return]


def test_idle_connections_under_a_low_descriptor_limit_only_delay_a_login(data_dir: Path, oauth_url: str) -> None:
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        started = _start(daemon, oauth_url)
        port, pid = _callback_port(started["authorizationUrl"]), daemon.process.pid
        limit = _open_descriptors(pid) + SPARE_DESCRIPTORS
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (limit, limit))
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(IDLE_CONNECTIONS)]
        try:
            assert _wait_logged(daemon, "oauth_callback_accept_failed"), "accept never ran out of descriptors"
            held = _open_descriptors(pid)
        finally:
            for connection in idle:
                connection.close()
        began = time.monotonic()
        assert browse(started["authorizationUrl"]).status_code == 200
        done = daemon.wait_notification(
            "mcpServer/oauthLogin/completed", lambda p: p["loginId"] == started["loginId"], timeout=60
        )
        took = time.monotonic() - began
        print(f"{IDLE_CONNECTIONS} idle connections, descriptor limit {limit}: the daemon held {held} descriptors; "
              f"the redirect completed the login {took:.2f} s after they closed")  # fmt: skip
        assert done["success"], done
        again = login(daemon, "sec")
        assert again["success"], again


def test_a_head_that_never_ends_or_never_comes_is_dropped(data_dir: Path, oauth_url: str) -> None:
    """Over the head cap the connection is closed at once; a silent one after the short head timeout; connections
    past the per-port cap are closed as soon as they are accepted. The login is untouched by all three."""
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        started = _start(daemon, oauth_url)
        port = _callback_port(started["authorizationUrl"])
        with socket.create_connection(("127.0.0.1", port)) as oversized:
            oversized.settimeout(10)
            oversized.sendall(b"GET /oauth/callback?" + b"a" * (9 * 1024))
            assert oversized.recv(1) == b"", "a head over the cap was kept open"
        silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(40)]
        try:
            closed_at = _closing_times(silent, timeout=15)
        finally:
            for connection in silent:
                connection.close()
        assert len(closed_at) == len(silent), "a silent connection was never closed"
        at_once = sum(1 for t in closed_at if t < 1.0)
        print(f"40 silent connections: {at_once} closed at once, the last after {max(closed_at):.2f} s")
        assert at_once >= 40 - 16, "connections past the cap were kept"
        assert browse(started["authorizationUrl"]).status_code == 200
        done = daemon.wait_notification("mcpServer/oauthLogin/completed", timeout=60)
        assert done["success"], done


def test_idle_connections_held_open_never_keep_the_real_redirect_out(data_dir: Path, oauth_url: str) -> None:
    """A local program holds more idle connections than the listener serves, and keeps them open: the browser's
    redirect still completes the login at once (an idle connection gives way to it)."""
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        started = _start(daemon, oauth_url)
        port = _callback_port(started["authorizationUrl"])
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(32)]
        try:
            assert browse(started["authorizationUrl"]).status_code == 200
            done = daemon.wait_notification(
                "mcpServer/oauthLogin/completed", lambda p: p["loginId"] == started["loginId"], timeout=60
            )
            assert done["success"], done
        finally:
            for connection in idle:
                connection.close()
