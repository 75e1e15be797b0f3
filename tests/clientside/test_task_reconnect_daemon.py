"""A dropped HTTP stream does not lose a task (SPEC §16): the connections between the daemon and a Streamable HTTP
server are cut mid-task (a proxy in between closes every socket, the server stays up), and the call still answers
with the task's result: the daemon reconnects and polls the same task again, never starting the call anew."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from scripts.smoke.fixtures.launch import http_script
from testing.cut_proxy import cuttable
from testing.daemon_client import Daemon
from testing.fixtures import NODE_MODULES, everything_http
from testing.threads import START_TIMEOUT, call, start_call, start_thread

pytestmark = pytest.mark.daemon


def progress_of(daemon: Daemon, call_id: Any) -> list[dict[str, Any]]:
    return [p for p in daemon.notifications("mcpServer/tool/progress") if p["requestId"] == call_id]


@pytest.mark.skipif(sys.platform != "linux", reason="loopback proxy threads; the fixture's HTTP mode")
def test_a_task_call_survives_its_connections_being_cut(daemon: Daemon) -> None:
    with http_script("ext_tasks_server.py", "--http") as url, cuttable(url) as (through, proxy):
        config = {"type": "http", "url": through, "protocol": "2026-07-28"}
        thread_id = start_thread(daemon, mcpServers={"xt": config})
        call_id = start_call(daemon, thread_id, "xt", "report", {"topic": "tides", "steps": 12})
        daemon.wait_notification("mcpServer/tool/progress", lambda p: p["requestId"] == call_id, timeout=START_TIMEOUT)
        assert proxy.cut() > 0
        response = daemon.wait_response(call_id, timeout=START_TIMEOUT)
        assert response["result"]["content"][0]["text"] == "report on tides (as a task)", response
        statuses = [
            p["status"]
            for p in daemon.notifications("mcpServer/startupStatus/updated")
            if p["threadId"] == thread_id and p["name"] == "xt"
        ]
        assert statuses == ["starting", "ready", "failed", "starting", "ready"]  # the cut, then the reconnect
        relayed = progress_of(daemon, call_id)
        values = [p["progress"] for p in relayed]
        assert values == sorted(set(values)) and "stage 12 of 12" in [p["message"] for p in relayed]
        assert call(daemon, thread_id, "xt", "created", {})["content"][0]["text"] == "1"  # followed, not called again
        assert call(daemon, thread_id, "xt", "cancelled", {})["content"][0]["text"] == "0"  # and never cancelled


@pytest.mark.skipif(
    not (NODE_MODULES / "@modelcontextprotocol" / "server-everything").exists(), reason="npm servers not installed"
)
def test_server_everythings_research_task_survives_cut_connections(daemon: Daemon) -> None:
    with everything_http() as (url, _process), cuttable(url) as (through, proxy):
        thread_id = start_thread(daemon, mcpServers={"ev": {"type": "http", "url": through}})
        call_id = start_call(daemon, thread_id, "ev", "simulate-research-query", {"topic": "tides"})
        daemon.wait_notification("mcpServer/tool/progress", lambda p: p["requestId"] == call_id, timeout=START_TIMEOUT)
        assert proxy.cut() > 0
        response = daemon.wait_response(call_id, timeout=START_TIMEOUT)
        assert response["result"]["content"][0]["text"].startswith("# Research Report: tides"), response
