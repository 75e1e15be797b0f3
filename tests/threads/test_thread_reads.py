"""Thread-scoped reads right after ``thread/start`` (SPEC §4) and the runtime's typed errors (SPEC §1).

Reads with a ``threadId`` wait for that thread's starting servers (each bounded by its startup timeout), as
tool calls do: a host building the model's tool list at turn start gets the tools. Driven black-box through
the daemon against the SDK fixture server; every wait is on a message, never a sleep.
"""

from __future__ import annotations

from typing import Any

import pytest

from testing.daemon_client import Daemon, DaemonError
from testing.fixtures import fixture_config, script

pytestmark = pytest.mark.daemon

START_TIMEOUT = 40.0


def start_thread(daemon: Daemon, servers: dict[str, Any]) -> str:
    thread_id: str = daemon.request("thread/start", {"mcpServers": servers})["thread"]["id"]
    return thread_id


def request(daemon: Daemon, method: str, params: dict[str, Any]) -> Any:
    return daemon.request(method, params, timeout=START_TIMEOUT)


@pytest.mark.parametrize("protocol", ["2025-11-25", "2026-07-28"])
def test_reads_right_after_thread_start_wait_for_the_servers(daemon: Daemon, protocol: str) -> None:
    thread_id = start_thread(daemon, {"fx": fixture_config(protocol=protocol, startupTimeoutMs=30_000)})
    # No wait for `ready`: each read below is sent at once and must see the started server.
    tools = request(daemon, "mcpTool/listForContext", {"threadId": thread_id})["data"]
    assert {"mcp__fx__echo", "mcp__fx__add"} <= {tool["name"] for tool in tools}

    prompt = request(
        daemon, "mcpPrompt/get", {"threadId": thread_id, "server": "fx", "name": "greet", "arguments": {"name": "Ada"}}
    )
    assert prompt["messages"][0]["content"]["text"] == "Hello, Ada!"

    read = request(
        daemon, "mcpServer/resource/read", {"threadId": thread_id, "server": "fx", "uri": "fixture://static/hello"}
    )
    assert read["contents"][0]["text"] == "hello world"


def test_status_and_search_right_after_thread_start(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, {"fx": fixture_config(startupTimeoutMs=30_000)})
    rows = request(daemon, "mcpServerStatus/list", {"threadId": thread_id})["data"]
    assert [(row["name"], row["runtimeStatus"]) for row in rows] == [("fx", "connected")]
    assert "echo" in rows[0]["tools"]

    found = request(daemon, "mcpTool/search", {"threadId": thread_id, "query": "echo"})["data"]
    assert "mcp__fx__echo" in [tool["name"] for tool in found]
    prompts = request(daemon, "mcpPrompt/list", {"threadId": thread_id})["data"]
    assert [p["name"] for p in prompts] == ["greet"]
    resources = request(daemon, "mcpResource/list", {"threadId": thread_id})["resources"]
    assert "fixture://static/hello" in {r["uri"] for r in resources}


def test_a_failed_server_shows_its_typed_error_in_the_row(daemon: Daemon) -> None:
    command = script("crash_at_start.py")
    thread_id = start_thread(
        daemon,
        {
            "fx": fixture_config(startupTimeoutMs=30_000),
            "bad": {"command": command[0], "args": command[1:], "startupTimeoutMs": 30_000},
        },
    )
    rows = {row["name"]: row for row in request(daemon, "mcpServerStatus/list", {"threadId": thread_id})["data"]}
    assert rows["fx"]["runtimeStatus"] == "connected"
    assert rows["bad"]["runtimeStatus"] == "failed"
    assert rows["bad"]["lastError"]["reason"] == "startupFailed"
    # The tools of the healthy server are still listed.
    tools = request(daemon, "mcpTool/listForContext", {"threadId": thread_id})["data"]
    assert {tool["server"] for tool in tools} == {"fx"}


def test_missing_resource_and_prompt_are_named(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, {"fx": fixture_config(startupTimeoutMs=30_000)})
    uri = "fixture://static/missing"
    with pytest.raises(DaemonError) as info:
        request(daemon, "mcpServer/resource/read", {"threadId": thread_id, "server": "fx", "uri": uri})
    assert info.value.code == -32010
    assert info.value.data["reason"] == "unknownResource"
    assert info.value.data["uri"] == uri and info.value.data["server"] == "fx"

    with pytest.raises(DaemonError) as info:
        request(daemon, "mcpPrompt/get", {"threadId": thread_id, "server": "fx", "name": "nope"})
    assert info.value.code == -32010
    assert info.value.data == {"reason": "unknownPrompt", "prompt": "nope", "server": "fx"}


def test_a_timeout_names_server_tool_and_deadline(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, {"fx": fixture_config(startupTimeoutMs=30_000)})
    params = {"threadId": thread_id, "server": "fx", "tool": "sleep", "arguments": {"ms": 10_000}, "timeoutMs": 200}
    with pytest.raises(DaemonError) as info:
        request(daemon, "mcpServer/tool/call", params)
    assert info.value.code == -32015
    data = info.value.data
    assert (data["reason"], data["server"], data["tool"], data["timeoutMs"]) == ("timeout", "fx", "sleep", 200)
