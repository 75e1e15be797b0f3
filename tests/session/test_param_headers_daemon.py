"""``x-mcp-header`` through the real daemon (SPEC §5): on 2026-07-28 HTTP connections annotated arguments travel as
``Mcp-Param-*`` headers (none for ``null``), and tools with invalid annotations are left out of the catalog, logged
and named in the status row. The fixture is an SDK server that records the headers it received."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scripts.smoke.fixtures.launch import http_script
from testing.daemon_client import Daemon, DaemonError, running_daemon

pytestmark = pytest.mark.daemon

INVALID = ["bad_object_header", "bad_duplicate_header"]


@pytest.fixture
def headers_daemon(data_dir: Path) -> Iterator[tuple[Daemon, str]]:
    with http_script("headers_server.py") as url, running_daemon(data_dir) as d:
        d.initialize()
        d.request("mcpServer/create", {"name": "hdr", "config": {"type": "http", "url": url}})
        yield d, d.request("thread/start", {"servers": ["hdr"]})["thread"]["id"]


def call(d: Daemon, thread_id: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"threadId": thread_id, "server": "hdr", "tool": tool, "arguments": arguments}
    return d.request("mcpServer/tool/call", params, timeout=30)  # type: ignore[no-any-return]


def seen(d: Daemon, thread_id: str) -> dict[str, str]:
    return call(d, thread_id, "seen_headers", {})["structuredContent"]["headers"]  # type: ignore[no-any-return]


def test_annotated_arguments_become_mcp_param_headers_and_null_sends_none(headers_daemon: tuple[Daemon, str]) -> None:
    d, thread_id = headers_daemon
    result = call(d, thread_id, "route", {"region": "Hello, 世界", "priority": 3, "verbose": None, "query": "q"})
    assert result["content"][0]["text"] == "Hello, 世界/3/None/q"
    encoded = base64.b64encode("Hello, 世界".encode()).decode()
    assert seen(d, thread_id) == {"mcp-param-region": f"=?base64?{encoded}?=", "mcp-param-priority": "3"}

    call(d, thread_id, "route", {"region": "us-west1", "priority": 42, "verbose": True})
    assert seen(d, thread_id) == {"mcp-param-region": "us-west1", "mcp-param-priority": "42",
                                  "mcp-param-verbose": "true"}
    with pytest.raises(DaemonError) as err:  # null is "not provided" only where the argument is optional
        call(d, thread_id, "route", {"region": None, "priority": 1})
    assert err.value.reason == "invalidArguments"


def test_tools_with_invalid_annotations_are_left_out_and_named(headers_daemon: tuple[Daemon, str]) -> None:
    d, thread_id = headers_daemon
    d.request("mcpServer/start", {"name": "hdr"}, timeout=30)
    listed = {tool["tool"] for tool in d.request("mcpTool/list", {"server": "hdr"})["data"]}
    assert listed == {"route", "seen_headers"}
    for params in ({"serverName": "hdr"}, {"serverName": "hdr", "threadId": thread_id}):
        row = d.request("mcpServerStatus/list", params)["data"][0]
        assert row["runtimeStatus"] == "connected" and row["protocolVersion"] == "2026-07-28"
        assert set(row["tools"]) == {"route", "seen_headers"}
        assert row["lastError"]["reason"] == "invalidOutput"
        assert row["lastError"]["data"] == {"droppedTools": INVALID}
    with pytest.raises(DaemonError) as err:
        call(d, thread_id, "bad_object_header", {"data": {}})
    assert err.value.reason == "unknownTool"
    assert "tools_dropped_invalid_headers" in d.stderr()
    assert all(name in d.stderr() for name in INVALID)


def test_a_2025_connection_mirrors_nothing_and_drops_nothing(data_dir: Path) -> None:
    """The annotations are a 2026-07-28 rule: an older connection lists the server's tools as they are."""
    with http_script("headers_server.py") as url, running_daemon(data_dir) as d:
        d.initialize()
        config = {"type": "http", "url": url, "protocol": "2025-11-25"}
        d.request("mcpServer/create", {"name": "hdr", "config": config})
        row = d.request("mcpServer/start", {"name": "hdr"}, timeout=30)["status"]
        assert row["protocolVersion"] == "2025-11-25" and "lastError" not in row
        assert {"route", *INVALID} <= set(row["tools"])
