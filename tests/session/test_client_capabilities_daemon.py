"""What the daemon advertises to MCP servers (SPEC §5, §16): a thread connection offers both elicitation modes and
task support, in both protocol eras."""

from __future__ import annotations

import json
from typing import Any

import pytest

from testing.daemon_client import Daemon
from testing.fixtures import fixture_config

pytestmark = pytest.mark.daemon

START_TIMEOUT = 60.0


def declared(daemon: Daemon, thread_id: str, server: str) -> Any:
    params = {"threadId": thread_id, "server": server, "tool": "client_capabilities"}
    result = daemon.request("mcpServer/tool/call", params, timeout=START_TIMEOUT)
    return json.loads(result["content"][0]["text"])


@pytest.mark.parametrize("protocol", ["2025-11-25", "2026-07-28", "auto"])
def test_thread_connections_advertise_both_elicitation_modes_and_tasks(daemon: Daemon, protocol: str) -> None:
    config = fixture_config("--capabilities-tool", protocol=protocol)
    thread_id = daemon.request("thread/start", {"mcpServers": {"fx": config}})["thread"]["id"]
    capabilities = declared(daemon, thread_id, "fx")
    assert capabilities["elicitation"] == {"form": {}, "url": {}}
    if protocol == "2025-11-25":
        assert capabilities["tasks"] == {}
    else:
        assert capabilities["extensions"]["io.modelcontextprotocol/tasks"] == {}

