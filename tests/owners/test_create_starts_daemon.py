"""``mcpServer/create`` of an enabled server starts it, as at launch (issue 46): its row says ``starting`` at once
and ``mcpServer/startupStatus/updated`` follows it to ``ready``, with no ``mcpServer/start``; a disabled one stays
``disabled``. Against npm server-memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing.daemon_client import Daemon
from testing.fixtures import memory_config
from testing.threads import START_TIMEOUT

pytestmark = pytest.mark.daemon


def test_an_enabled_server_created_starts_and_a_disabled_one_does_not(daemon: Daemon, tmp_path: Path) -> None:
    daemon.request("mcpServer/create", {"name": "mem", "config": memory_config(tmp_path / "memory.jsonl")})
    [row] = daemon.request("mcpServerStatus/list", {"serverName": "mem"})["data"]
    assert row["runtimeStatus"] in ("starting", "connected")  # never notStarted
    daemon.wait_notification(
        "mcpServer/startupStatus/updated", lambda p: (p["name"], p["status"]) == ("mem", "ready"), timeout=START_TIMEOUT
    )
    [row] = daemon.request("mcpServerStatus/list", {"serverName": "mem"})["data"]
    assert row["runtimeStatus"] == "connected" and "read_graph" in row["tools"]
    assert "read_graph" in {view["tool"] for view in daemon.request("mcpTool/list", {"server": "mem"})["data"]}

    off = memory_config(tmp_path / "off.jsonl", enabled=False)
    daemon.request("mcpServer/create", {"name": "off", "config": off})
    [row] = daemon.request("mcpServerStatus/list", {"serverName": "off"})["data"]
    assert row["runtimeStatus"] == "disabled"
    updates = daemon.notifications("mcpServer/startupStatus/updated")
    assert [u["status"] for u in updates if u["name"] == "mem"] == ["starting"]  # the ready one was consumed
    assert not [u for u in updates if u["name"] == "off"]
