"""Status that says what happened with an HTTP server (issue 46), against npm server-everything over Streamable
HTTP: a refused connection is named; a handshake refused with any HTTP status is named with that status and what
the server said (a stdlib server in maintenance); a pinned protocol version the server refuses is named with the
HTTP status it answered; a management connection to a server that died is noticed (its heartbeat), said in its row
and in ``mcpServer/startupStatus/updated``, and restarted with backoff once the server is back."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from testing.daemon_client import Daemon, DaemonError
from testing.fixtures import everything_http, free_port
from testing.threads import START_TIMEOUT

pytestmark = pytest.mark.daemon

DEATH_NOTICED_S = 30.0
"""The heartbeat asks every 10 s and waits as long for an answer."""


def _start_error(daemon: Daemon, name: str, config: dict[str, Any]) -> DaemonError:
    daemon.request("mcpServer/create", {"name": name, "config": config})
    with pytest.raises(DaemonError) as refused:
        daemon.request("mcpServer/start", {"name": name}, timeout=START_TIMEOUT)
    [row] = daemon.request("mcpServerStatus/list", {"serverName": name})["data"]
    assert row["runtimeStatus"] == "failed" and row["lastError"]["message"] == refused.value.message
    return refused.value


def test_a_refused_connection_is_named(daemon: Daemon) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    error = _start_error(daemon, "gone", {"type": "http", "url": url, "startupTimeoutMs": 10_000})
    assert (error.reason, error.data["detail"]) == ("startupFailed", "connectionRefused")
    assert error.message.startswith("connection refused")


class _Maintenance(BaseHTTPRequestHandler):
    """A server in maintenance: every request is answered 503 with a sentence."""

    BODY = b"down for maintenance until 04:00"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(503)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(self.BODY)))
        self.end_headers()
        self.wfile.write(self.BODY)

    do_GET = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def _maintenance_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Maintenance)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_refused_handshake_is_named_with_its_http_status_and_what_the_server_said(daemon: Daemon) -> None:
    with _maintenance_server() as url:
        error = _start_error(daemon, "maint", {"type": "http", "url": url, "enabled": False})
    assert (error.reason, error.data["detail"], error.data["httpStatus"]) == ("startupFailed", "httpStatus", 503)
    assert error.message == "the server refused the handshake: HTTP 503: down for maintenance until 04:00"


def test_a_pinned_version_the_server_refuses_is_named_with_its_http_status(daemon: Daemon) -> None:
    with everything_http() as (url, _):
        error = _start_error(daemon, "pinned", {"type": "http", "url": url, "protocol": "2026-07-28"})
    assert (error.reason, error.data["detail"]) == ("startupFailed", "unsupportedProtocolVersion")
    assert error.data["httpStatus"] == 400 and error.data["protocol"] == "2026-07-28"
    assert "Server not initialized" in error.message and "closed the connection" not in error.message


def test_a_dead_http_server_is_noticed_and_restarted_when_it_is_back(daemon: Daemon) -> None:
    port = free_port()
    with everything_http(port) as (url, _):
        daemon.request("mcpServer/create", {"name": "ev", "config": {"type": "http", "url": url}})
        daemon.request("mcpServer/start", {"name": "ev"}, timeout=START_TIMEOUT)
        tools = {view["tool"] for view in daemon.request("mcpTool/list", {"server": "ev"})["data"]}
        assert "echo" in tools
        _status(daemon, "ready")
    failed = _status(daemon, "failed", DEATH_NOTICED_S)  # the server is gone; nothing used it
    assert failed["error"]["reason"] == "connectionLost" and "connection refused" in failed["error"]["message"]
    [row] = daemon.request("mcpServerStatus/list", {"serverName": "ev"})["data"]
    assert row["runtimeStatus"] == "failed" and row["lastError"]["reason"] == "connectionLost"
    assert {view["tool"] for view in daemon.request("mcpTool/list", {"server": "ev"})["data"]} == tools
    with everything_http(port):
        _status(daemon, "ready", DEATH_NOTICED_S)  # restarted with backoff
        [row] = daemon.request("mcpServerStatus/list", {"serverName": "ev"})["data"]
        assert row["runtimeStatus"] == "connected"


def _status(daemon: Daemon, status: str, timeout: float = START_TIMEOUT) -> dict[str, Any]:
    return daemon.wait_notification(
        "mcpServer/startupStatus/updated",
        lambda p: (p["threadId"], p["name"], p["status"]) == (None, "ev", status),
        timeout=timeout,
    )
