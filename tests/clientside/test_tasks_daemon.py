"""Tools the server runs as tasks (SPEC §16), through the real daemon against server-everything's
``simulate-research-query`` (``execution.taskSupport: "required"``, 2025-11-25 tasks)."""

from __future__ import annotations

import pytest

from testing.daemon_client import Daemon
from testing.fixtures import NODE_MODULES, everything_config
from testing.ordering import until_response
from testing.threads import START_TIMEOUT, start_call, start_thread

pytestmark = [pytest.mark.daemon, pytest.mark.skipif(
    not (NODE_MODULES / "@modelcontextprotocol" / "server-everything").exists(), reason="npm servers not installed"
)]
RESEARCH = "simulate-research-query"


def test_a_required_task_tool_returns_its_report_with_status_as_progress(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"ev": everything_config()})
    call_id = start_call(daemon, thread_id, "ev", RESEARCH, {"topic": "tides"})
    response = daemon.wait_response(call_id, timeout=START_TIMEOUT)
    report = response["result"]["content"][0]["text"]
    assert report.startswith("# Research Report: tides") and not response["result"]["isError"]
    progress = [p for p in daemon.notifications("mcpServer/tool/progress") if p["requestId"] == call_id]
    messages = [p["message"] for p in progress]
    assert "Gathering sources..." in messages and "Generating report..." in messages
    assert [p["progress"] for p in progress] == sorted({p["progress"] for p in progress})


def test_a_task_asking_for_input_asks_the_calling_connection(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"ev": everything_config()})
    call_id = start_call(daemon, thread_id, "ev", RESEARCH, {"topic": "python", "ambiguous": True})
    request = daemon.wait_server_request("mcpServer/elicitation/request", timeout=START_TIMEOUT)
    params = request["params"]
    assert (params["threadId"], params["serverName"], params["mode"]) == (thread_id, "ev", "form")
    choices = [option["const"] for option in params["requestedSchema"]["properties"]["interpretation"]["oneOf"]]
    assert "snake" in choices
    daemon.answer(request["id"], {"action": "accept", "content": {"interpretation": "snake"}})
    response = daemon.wait_response(call_id, timeout=START_TIMEOUT)
    assert response["result"]["content"][0]["text"].startswith("# Research Report: python (snake)")


def test_cancelling_a_task_call_cancels_the_task(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"ev": everything_config()})
    call_id = start_call(daemon, thread_id, "ev", RESEARCH, {"topic": "tides"})
    daemon.wait_notification("mcpServer/tool/progress", lambda p: p["requestId"] == call_id, timeout=START_TIMEOUT)
    daemon.notify("$/cancelRequest", {"id": call_id})
    _, response = until_response(daemon, call_id, lambda m: False, START_TIMEOUT)
    assert response["error"]["data"]["reason"] == "cancelled"
