"""Tasks under the 2026-07-28 ``io.modelcontextprotocol/tasks`` extension (SPEC §16), through the real daemon against
a fixture server built on the SDK: the server makes each call a task, and the daemon polls it to its result, relays
its status messages as progress, routes its requests for input to the calling connection and cancels it upstream."""

from __future__ import annotations

from typing import Any

import pytest

from testing.daemon_client import Daemon
from testing.fixtures import script
from testing.ordering import until_response
from testing.threads import START_TIMEOUT, call, start_call, start_thread

pytestmark = pytest.mark.daemon


def ext_config(protocol: str = "2026-07-28") -> dict[str, Any]:
    command = script("ext_tasks_server.py")
    return {"command": command[0], "args": command[1:], "protocol": protocol}


@pytest.mark.parametrize("protocol", ["2026-07-28", "auto"])
def test_a_call_the_server_makes_a_task_returns_its_result_with_status_as_progress(
    daemon: Daemon, protocol: str
) -> None:
    thread_id = start_thread(daemon, mcpServers={"xt": ext_config(protocol)})
    call_id = start_call(daemon, thread_id, "xt", "report", {"topic": "tides", "steps": 3})
    response = daemon.wait_response(call_id, timeout=START_TIMEOUT)
    assert response["result"]["content"][0]["text"] == "report on tides (as a task)"
    assert response["result"]["isError"] is False and "resultType" not in response["result"]
    messages = [p["message"] for p in daemon.notifications("mcpServer/tool/progress") if p["requestId"] == call_id]
    assert "stage 3 of 3" in messages


def test_a_task_asking_for_input_asks_the_calling_connection(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"xt": ext_config()})
    call_id = start_call(daemon, thread_id, "xt", "confirm", {"topic": "tides"})
    request = daemon.wait_server_request("mcpServer/elicitation/request", timeout=START_TIMEOUT)
    params = request["params"]
    assert (params["threadId"], params["serverName"], params["mode"]) == (thread_id, "xt", "form")
    assert params["message"] == "Write the report on tides?"
    daemon.answer(request["id"], {"action": "accept", "content": {"ok": True}})
    response = daemon.wait_response(call_id, timeout=START_TIMEOUT)
    assert response["result"]["content"][0]["text"] == "confirmed report on tides (as a task)"


def test_cancelling_a_call_cancels_its_task_upstream(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"xt": ext_config()})
    call_id = start_call(daemon, thread_id, "xt", "wait_forever", {})
    daemon.wait_notification("mcpServer/tool/progress", lambda p: p["requestId"] == call_id, timeout=START_TIMEOUT)
    daemon.notify("$/cancelRequest", {"id": call_id})
    _, response = until_response(daemon, call_id, lambda m: False, START_TIMEOUT)
    assert response["error"]["data"]["reason"] == "cancelled"
    assert call(daemon, thread_id, "xt", "cancelled", {})["content"][0]["text"] == "1"


def test_a_background_call_follows_the_servers_task(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"xt": ext_config()})
    params = {"threadId": thread_id, "server": "xt", "tool": "report", "arguments": {"topic": "ebb", "steps": 2}}
    task = daemon.request("mcpServer/tool/call", {**params, "background": True}, timeout=START_TIMEOUT)["task"]
    daemon.wait_notification(
        "mcpServer/task/updated",
        lambda p: p["task"]["taskId"] == task["taskId"] and p["task"].get("statusMessage") == "stage 2 of 2",
        timeout=START_TIMEOUT,
    )
    result = daemon.request("mcpServer/task/result", {"threadId": thread_id, "taskId": task["taskId"]})
    assert result["content"][0]["text"] == "report on ebb (as a task)"


def test_an_optional_task_tool_runs_as_a_task_when_the_host_asks_for_a_background_call(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"xt": ext_config("2025-11-25")})
    arguments = {"topic": "tides", "steps": 2}
    assert call(daemon, thread_id, "xt", "report", arguments)["content"][0]["text"] == "report on tides (inline)"
    params = {"threadId": thread_id, "server": "xt", "tool": "report", "arguments": arguments, "background": True}
    task = daemon.request("mcpServer/tool/call", params, timeout=START_TIMEOUT)["task"]
    daemon.wait_notification(
        "mcpServer/task/updated",
        lambda p: p["task"]["taskId"] == task["taskId"] and p["task"].get("statusMessage") == "stage 2 of 2",
        timeout=START_TIMEOUT,
    )
    result = daemon.request("mcpServer/task/result", {"threadId": thread_id, "taskId": task["taskId"]})
    assert result["content"][0]["text"] == "report on tides (as a task)"
    assert call(daemon, thread_id, "xt", "created", {})["content"][0]["text"] == "1"


def test_a_task_that_fails_fails_the_call_with_the_servers_error(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"xt": ext_config()})
    call_id = start_call(daemon, thread_id, "xt", "broken", {})
    error = daemon.wait_response(call_id, timeout=START_TIMEOUT)["error"]
    assert error["data"]["reason"] == "upstreamError"
    assert error["data"]["mcpMessage"] == "the report could not be written"
