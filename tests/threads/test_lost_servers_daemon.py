"""A connection lost after it was ready (SPEC §4, issue 46): a crashed server keeps its catalog for the model, says
why in its row and in ``mcpServer/startupStatus/updated``, and reconnects on the next call (a thread) or by itself
with backoff (the management connection), against npm server-memory."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import Daemon
from testing.fixtures import memory_config
from testing.threads import START_TIMEOUT, call, start_thread, wait_ready

pytestmark = pytest.mark.daemon

MEMORY_TOOLS = {"read_graph", "create_entities", "search_nodes"}


def _pid_with_env(marker: str) -> int:
    """The pid of the process started with ``marker`` (an env assignment) in its environment (Linux ``/proc``)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if marker.encode() in environ:
                return int(entry)
    raise AssertionError(f"no process with {marker}")


def _failed(daemon: Daemon, thread_id: str | None, name: str) -> dict[str, Any]:
    return daemon.wait_notification(
        "mcpServer/startupStatus/updated",
        lambda p: (p["threadId"], p["name"], p["status"]) == (thread_id, name, "failed"),
        timeout=START_TIMEOUT,
    )


def _tool_names(views: list[dict[str, Any]], server: str) -> set[str]:
    return {view["tool"] for view in views if view["server"] == server}


def test_a_crashed_thread_server_keeps_its_tools_says_why_and_its_next_call_reconnects(
    daemon: Daemon, tmp_path: Path
) -> None:
    memory_file = tmp_path / "memory.jsonl"
    thread_id = start_thread(daemon, mcpServers={"mem": memory_config(memory_file)})
    wait_ready(daemon, thread_id, "mem")
    assert call(daemon, thread_id, "mem", "read_graph", {})["isError"] is False
    offered = daemon.request("mcpTool/listForContext", {"threadId": thread_id})["data"]
    assert MEMORY_TOOLS <= _tool_names(offered, "mem")

    os.kill(_pid_with_env(f"MEMORY_FILE_PATH={memory_file}"), signal.SIGKILL)
    failed = _failed(daemon, thread_id, "mem")
    assert failed["error"]["reason"] == "connectionLost" and "exit" in failed["error"]["message"]

    [row] = daemon.request("mcpServerStatus/list", {"threadId": thread_id})["data"]
    assert row["runtimeStatus"] == "failed" and row["lastError"]["reason"] == "connectionLost"
    assert MEMORY_TOOLS <= set(row["tools"])
    still = daemon.request("mcpTool/listForContext", {"threadId": thread_id})["data"]
    assert _tool_names(still, "mem") == _tool_names(offered, "mem"), "the model keeps the crashed server's tools"
    found = daemon.request("mcpTool/search", {"query": "select:mcp__mem__read_graph", "threadId": thread_id})
    assert [view["name"] for view in found["data"]] == ["mcp__mem__read_graph"]

    created = call(daemon, thread_id, "mem", "create_entities", {"entities": [
        {"name": "daemon", "entityType": "program", "observations": ["came back"]}]})  # fmt: skip
    assert created["isError"] is False, "the next call reconnected first"
    wait_ready(daemon, thread_id, "mem")
    [row] = daemon.request("mcpServerStatus/list", {"threadId": thread_id})["data"]
    assert row["runtimeStatus"] == "connected" and "lastError" not in row


def test_a_crashed_management_server_keeps_its_catalog_says_why_and_restarts(daemon: Daemon, tmp_path: Path) -> None:
    memory_file = tmp_path / "memory.jsonl"
    daemon.request("mcpServer/create", {"name": "mem", "config": memory_config(memory_file)})
    daemon.request("mcpServer/start", {"name": "mem"}, timeout=START_TIMEOUT)
    _ready(daemon)
    listed = _tool_names(daemon.request("mcpTool/list", {"server": "mem"})["data"], "mem")
    assert MEMORY_TOOLS <= listed

    os.kill(_pid_with_env(f"MEMORY_FILE_PATH={memory_file}"), signal.SIGKILL)
    failed = _failed(daemon, None, "mem")
    assert failed["error"]["reason"] == "connectionLost"
    assert _tool_names(daemon.request("mcpTool/list", {"server": "mem"})["data"], "mem") == listed
    _ready(daemon)  # restarted by itself, with backoff
    [row] = daemon.request("mcpServerStatus/list", {"serverName": "mem"})["data"]
    assert row["runtimeStatus"] == "connected" and MEMORY_TOOLS <= set(row["tools"])


def _ready(daemon: Daemon) -> None:
    daemon.wait_notification(
        "mcpServer/startupStatus/updated",
        lambda p: (p["threadId"], p["name"], p["status"]) == (None, "mem", "ready"),
        timeout=START_TIMEOUT,
    )
