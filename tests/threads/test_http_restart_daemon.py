"""An HTTP server that restarts (issue 46), against npm server-everything over Streamable HTTP: it no longer knows
the session the daemon had. A thread's tools stay offered while it is down and after, and its next call is
answered on a new session (the refused call is sent again once: the server never ran it); a management connection
notices it on its next heartbeat and reconnects."""

from __future__ import annotations

from typing import Any

import pytest

from testing.daemon_client import Daemon
from testing.fixtures import everything_http, free_port
from testing.threads import START_TIMEOUT, call, start_thread

pytestmark = pytest.mark.daemon

HEARTBEAT_NOTICE_S = 30.0
"""The management heartbeat asks every 10 s."""


def _offered(daemon: Daemon, thread_id: str) -> set[str]:
    views = daemon.request("mcpTool/listForContext", {"threadId": thread_id})["data"]
    return {view["tool"] for view in views if view["server"] == "ev"}


def _status(daemon: Daemon, thread_id: str | None, status: str, timeout: float = START_TIMEOUT) -> dict[str, Any]:
    return daemon.wait_notification(
        "mcpServer/startupStatus/updated",
        lambda p: (p["threadId"], p["name"], p["status"]) == (thread_id, "ev", status),
        timeout=timeout,
    )


def test_a_restarted_http_server_keeps_its_tools_and_the_next_call_is_answered(daemon: Daemon) -> None:
    port = free_port()
    with everything_http(port) as (url, _):
        thread_id = start_thread(daemon, mcpServers={"ev": {"type": "http", "url": url}})
        _status(daemon, thread_id, "starting")
        _status(daemon, thread_id, "ready")
        assert "before" in call(daemon, thread_id, "ev", "echo", {"message": "before"})["content"][0]["text"]
        offered = _offered(daemon, thread_id)
        assert "echo" in offered
    assert _offered(daemon, thread_id) == offered, "the model keeps the tools of a server that is down"
    found = daemon.request("mcpTool/search", {"query": "select:mcp__ev__echo", "threadId": thread_id})
    assert [view["name"] for view in found["data"]] == ["mcp__ev__echo"]
    with everything_http(port):  # the same server again: it knows nothing of the thread's session
        assert _offered(daemon, thread_id) == offered
        echoed = call(daemon, thread_id, "ev", "echo", {"message": "after"})
        assert echoed["isError"] is False and "after" in echoed["content"][0]["text"]
        _status(daemon, thread_id, "starting")  # the call reconnected first: a new session
        _status(daemon, thread_id, "ready")
        [row] = daemon.request("mcpServerStatus/list", {"threadId": thread_id})["data"]
        assert row["runtimeStatus"] == "connected" and "echo" in row["tools"]
        assert "again" in call(daemon, thread_id, "ev", "echo", {"message": "again"})["content"][0]["text"]


def test_a_management_connection_notices_a_restarted_http_server_and_reconnects(daemon: Daemon) -> None:
    port = free_port()
    with everything_http(port) as (url, server):
        daemon.request("mcpServer/create", {"name": "ev", "config": {"type": "http", "url": url}})
        _status(daemon, None, "ready")
        server.kill()  # restarted at once, between two heartbeats: nothing refuses a connection
        server.wait()
        with everything_http(port):
            failed = _status(daemon, None, "failed", HEARTBEAT_NOTICE_S)
            assert failed["error"]["reason"] == "connectionLost"
            assert "no longer knows this session" in failed["error"]["message"]
            _status(daemon, None, "ready", HEARTBEAT_NOTICE_S)
            [row] = daemon.request("mcpServerStatus/list", {"serverName": "ev"})["data"]
            assert row["runtimeStatus"] == "connected" and "echo" in row["tools"]


def test_a_restarted_sdk_server_answering_404_for_the_session_is_reconnected(daemon: Daemon) -> None:
    """The official SDK's server answers an unknown session with HTTP 404, the spec's word for an ended session."""
    from scripts.smoke.fixtures.launch import http_fixture

    port = str(free_port())
    with http_fixture("--legacy-only", "--port", port) as url:  # the 2025 era: a session per connection
        thread_id = start_thread(daemon, mcpServers={"ev": {"type": "http", "url": url}})
        _status(daemon, thread_id, "ready")
        assert call(daemon, thread_id, "ev", "echo", {"text": "before"})["content"][0]["text"] == "before"
    with http_fixture("--legacy-only", "--port", port):
        assert call(daemon, thread_id, "ev", "echo", {"text": "after"})["content"][0]["text"] == "after"
        _status(daemon, thread_id, "ready")
