"""Management methods through the real daemon against real MCP servers (our SDK fixtures, npm reference servers)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scripts.smoke.fixtures.launch import http_fixture
from testing.daemon_client import Daemon, DaemonError, running_daemon
from testing.fixtures import NODE_MODULES, everything_config, fixture_config, memory_config, script

pytestmark = pytest.mark.daemon

needs_node = pytest.mark.skipif(not (NODE_MODULES / "@modelcontextprotocol").exists(), reason="npm servers missing")


def command(name: str, *args: str, **extra: Any) -> dict[str, Any]:
    argv = script(name, *args)
    return {"command": argv[0], "args": argv[1:], **extra}


def statuses_of(d: Daemon, name: str) -> list[str]:
    return [p["status"] for p in d.notifications("mcpServer/startupStatus/updated") if p["name"] == name]


def start_error(d: Daemon, name: str) -> DaemonError:
    with pytest.raises(DaemonError) as err:
        d.request("mcpServer/start", {"name": name}, timeout=60)
    return err.value


def test_start_publishes_starting_then_ready_and_reports_status(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config()})
    status = daemon.request("mcpServer/start", {"name": "fx"}, timeout=60)["status"]
    assert status["runtimeStatus"] == "connected"
    assert status["protocolVersion"] == "2026-07-28"
    assert {"echo", "add", "ask"} <= set(status["tools"])
    assert statuses_of(daemon, "fx") == ["starting", "ready"]
    first = daemon.notifications("mcpServer/startupStatus/updated")[0]
    assert first == {"threadId": None, "name": "fx", "status": "starting", "error": None, "failureReason": None}
    daemon.request("mcpServer/start", {"name": "fx"}, timeout=60)
    assert statuses_of(daemon, "fx") == ["starting", "ready"]
    listed = daemon.request("mcpServerStatus/list", {"serverName": "fx"})["data"]
    assert listed[0]["runtimeStatus"] == "connected" and listed[0]["serverInfo"]["name"] == "fixture"
    slim = daemon.request("mcpServerStatus/list", {"detail": "toolsAndAuthOnly"})["data"][0]
    assert "serverInfo" not in slim and "echo" in slim["tools"] and slim["authStatus"] == "unsupported"
    daemon.request("mcpServer/stop", {"name": "fx"})
    assert daemon.request("mcpServerStatus/list")["data"][0]["runtimeStatus"] == "notStarted"


def test_pinned_legacy_protocol_is_recorded(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "old", "config": fixture_config(protocol="2025-11-25")})
    assert daemon.request("mcpServer/start", {"name": "old"}, timeout=60)["status"]["protocolVersion"] == "2025-11-25"


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        (command("crash_at_start.py"), "startupFailed"),
        (command("hang_at_start.py", startupTimeoutMs=1500), "timeout"),
        (command("garbage_stdout.py", startupTimeoutMs=1500), "timeout"),
        ({"command": "/nonexistent/mcp-server"}, "startupFailed"),
        (fixture_config("--extra-tools", "130"), "tooManyTools"),
        ({"type": "http", "url": "http://127.0.0.1:9/mcp", "bearerTokenEnvVar": "UNSET_TOKEN_VAR_X"}, "missingEnvVar"),
    ],
)
def test_failures_publish_failed_before_the_typed_error(daemon: Daemon, config: dict[str, Any], reason: str) -> None:
    # Created disabled, so that only this start runs (an enabled server created starts by itself).
    daemon.request("mcpServer/create", {"name": "bad", "config": {**config, "enabled": False}})
    err = start_error(daemon, "bad")
    assert err.reason == reason
    failed = daemon.notifications("mcpServer/startupStatus/updated")[-1]
    assert failed["status"] == "failed" and failed["error"]["reason"] == reason
    assert statuses_of(daemon, "bad") == ["starting", "failed"]
    status = daemon.request("mcpServerStatus/list")["data"][0]
    assert status["runtimeStatus"] == "failed" and status["lastError"]["reason"] == reason
    assert daemon.request("mcpServer/list")["data"][0]["name"] == "bad"


def test_crash_reports_stderr_tail_with_secrets_redacted(daemon: Daemon) -> None:
    config = command("crash_at_start.py", env={"CRASH_TOKEN": "tok-98765"}, enabled=False)
    daemon.request("mcpServer/create", {"name": "crash", "config": config})
    start_error(daemon, "crash")
    status = daemon.request("mcpServerStatus/list")["data"][0]
    assert status["stderrTail"]
    assert "tok-98765" not in json.dumps(status) and "tok-98765" not in daemon.stderr()


def test_status_list_never_waits_on_a_starting_server_and_stop_cancels(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "hang", "config": command("hang_at_start.py", enabled=False)})
    start = daemon.start_request("mcpServer/start", {"name": "hang"})
    daemon.wait_notification("mcpServer/startupStatus/updated", lambda p: p["status"] == "starting", consume=False)
    assert daemon.request("mcpServerStatus/list", timeout=2)["data"][0]["runtimeStatus"] == "starting"
    daemon.request("mcpServer/stop", {"name": "hang"}, timeout=30)
    response = daemon.wait_response(start)
    assert "error" in response
    assert statuses_of(daemon, "hang") == ["starting", "cancelled"]


def test_delete_interrupts_a_start(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "hang", "config": command("hang_at_start.py", enabled=False)})
    start = daemon.start_request("mcpServer/start", {"name": "hang"})
    daemon.wait_notification("mcpServer/startupStatus/updated", lambda p: p["status"] == "starting", consume=False)
    daemon.request("mcpServer/delete", {"name": "hang"}, timeout=30)
    assert "error" in daemon.wait_response(start)
    assert statuses_of(daemon, "hang") == ["starting", "cancelled"]
    assert daemon.request("mcpServer/list") == {"data": []}


def test_tool_views_filters_deferral_and_search(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config(
        "--extra-tools", "20", disabledTools=["fail"], alwaysVisibleTools=["echo"])})
    daemon.request("mcpServer/start", {"name": "fx"}, timeout=60)
    views = {v["name"]: v for v in daemon.request("mcpTool/list", {"limit": 1000})["data"]}
    assert "mcp__fx__fail" not in views
    assert views["mcp__fx__echo"]["alwaysVisible"] and views["mcp__fx__add"]["deferred"]
    visible = {v["name"] for v in daemon.request("mcpTool/listForContext", {})["data"]}
    assert visible == {"mcp__fx__echo"}
    everything = {v["name"] for v in daemon.request("mcpTool/listForContext", {"includeDeferred": True})["data"]}
    assert everything == set(views)
    selected = daemon.request("mcpTool/search", {"query": "select:mcp__fx__add,mcp__fx__fail,mcp__fx__echo"})
    assert [v["name"] for v in selected["data"]] == ["mcp__fx__add", "mcp__fx__echo"]
    assert selected["missing"] == ["mcp__fx__fail"]
    ranked = daemon.request("mcpTool/search", {"query": "echo", "limit": 3})["data"]
    assert ranked[0]["name"] == "mcp__fx__echo"
    # A kept answer is sent again as it was, and dropped once the catalog it came from changes.
    assert daemon.request("mcpTool/search", {"query": "echo", "limit": 3})["data"] == ranked
    daemon.request("mcpServer/update", {"name": "fx", "patch": {"disabledTools": ["fail", "echo"]}})
    daemon.request("mcpServer/start", {"name": "fx"}, timeout=60)
    assert "mcp__fx__echo" not in [v["name"] for v in daemon.request("mcpTool/search", {"query": "echo"})["data"]]
    reselected = daemon.request("mcpTool/search", {"query": "select:mcp__fx__add,mcp__fx__fail,mcp__fx__echo"})
    assert reselected["missing"] == ["mcp__fx__fail", "mcp__fx__echo"]
    page = daemon.request("mcpTool/list", {"server": "fx", "limit": 5})
    assert len(page["data"]) == 5 and page["nextCursor"]
    with pytest.raises(DaemonError) as err:
        daemon.request("mcpTool/list", {"server": "nope"})
    assert err.value.reason == "unknownServer"


def test_prompts_resources_and_preview(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config()})
    with pytest.raises(DaemonError) as err:
        daemon.request("mcpPrompt/get", {"server": "fx", "name": "greet"})
    assert err.value.reason == "notRunning"
    daemon.request("mcpServer/start", {"name": "fx"}, timeout=60)
    prompts = daemon.request("mcpPrompt/list")["data"]
    assert prompts[0]["server"] == "fx" and prompts[0]["name"] == "greet"
    got = daemon.request("mcpPrompt/get", {"server": "fx", "name": "greet", "arguments": {"name": "Ada"}})
    assert got["messages"][0]["content"]["text"] == "Hello, Ada!"
    with pytest.raises(DaemonError) as err:
        daemon.request("mcpPrompt/get", {"server": "fx", "name": "nope"})
    assert err.value.reason == "unknownPrompt"
    listed = daemon.request("mcpResource/list", {"server": "fx"})
    assert {r["uri"] for r in listed["resources"]} == {"fixture://static/hello", "fixture://static/blob"}
    assert listed["resourceTemplates"][0]["uriTemplate"] == "fixture://item/{id}"
    text = daemon.request("mcpServer/resource/read", {"server": "fx", "uri": "fixture://static/hello"})
    assert text["contents"][0]["text"] == "hello world"
    blob = daemon.request("mcpServer/resource/read", {"server": "fx", "uri": "fixture://static/blob", "preview": True})
    assert blob["contents"][0]["blobBytes"] == 256 and "blob" not in blob["contents"][0]
    item = daemon.request("mcpServer/resource/read", {"server": "fx", "uri": "fixture://item/42"})
    assert json.loads(item["contents"][0]["text"]) == {"id": "42"}
    assert daemon.request("mcpResource/subscribe", {"server": "fx", "uri": "fixture://static/hello"}) == {}
    assert daemon.request("mcpResource/unsubscribe", {"server": "fx", "uri": "fixture://static/hello"}) == {}


def test_streamable_http_fixture(daemon: Daemon) -> None:
    with http_fixture() as url:
        daemon.request("mcpServer/create", {"name": "web", "config": {"type": "http", "url": url}})
        status = daemon.request("mcpServer/start", {"name": "web"}, timeout=60)["status"]
        assert status["runtimeStatus"] == "connected" and "echo" in status["tools"]
        assert daemon.request("mcpServer/resource/read", {"server": "web", "uri": "fixture://static/hello"})[
            "contents"][0]["text"] == "hello world"
        daemon.request("mcpServer/stop", {"name": "web"})


def test_enabled_servers_start_with_the_daemon(data_dir: Path) -> None:
    with running_daemon(data_dir) as d:
        d.initialize()
        d.request("mcpServer/create", {"name": "fx", "config": fixture_config()})
        d.request("mcpServer/create", {"name": "off", "config": fixture_config(enabled=False)})
    with running_daemon(data_dir) as d:
        d.initialize()
        d.wait_notification("mcpServer/startupStatus/updated", lambda p: p["name"] == "fx" and p["status"] == "ready",
                            timeout=60)
        runtime = {s["name"]: s["runtimeStatus"] for s in d.request("mcpServerStatus/list")["data"]}
        assert runtime == {"fx": "connected", "off": "disabled"}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _wait_dead(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_stop_and_exit_reap_the_process_group(data_dir: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    config = command("spawn_grandchild.py", env={"FIXTURE_PID_FILE": str(pid_file)})
    with running_daemon(data_dir) as d:
        d.initialize()
        d.request("mcpServer/create", {"name": "gc", "config": config})
        d.request("mcpServer/start", {"name": "gc"}, timeout=60)
        grandchild = int(pid_file.read_text())
        assert _alive(grandchild)
        d.request("mcpServer/stop", {"name": "gc"}, timeout=30)
        assert _wait_dead(grandchild)
        pid_file.unlink()
        d.request("mcpServer/start", {"name": "gc"}, timeout=60)
        second = int(pid_file.read_text())
        assert d.close() == 0
    assert _wait_dead(second)


@needs_node
def test_server_everything_stdio_and_its_list_changed(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "ev", "config": everything_config()})
    status = daemon.request("mcpServer/start", {"name": "ev"}, timeout=60)["status"]
    assert status["protocolVersion"] == "2025-11-25"
    assert {"echo", "get-sum", "trigger-long-running-operation"} <= set(status["tools"])
    updated = daemon.wait_notification("mcp:tools_updated", lambda p: p["server"] == "ev", timeout=30)
    assert updated == {"server": "ev", "threadId": None}
    assert any(v["name"] == "mcp__ev__get-sum" for v in daemon.request("mcpTool/list", {"server": "ev"})["data"])
    assert daemon.request("mcpPrompt/list", {"server": "ev"})["data"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def everything_http() -> Iterator[str]:
    port = _free_port()
    entry = NODE_MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    process = subprocess.Popen(["node", str(entry), "streamableHttp"], env={**os.environ, "PORT": str(port)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    try:
        for line in process.stderr:
            if b"listening on port" in line:
                break
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


@needs_node
def test_server_everything_streamable_http(daemon: Daemon, everything_http: str) -> None:
    daemon.request("mcpServer/create", {"name": "evh", "config": {"type": "http", "url": everything_http}})
    status = daemon.request("mcpServer/start", {"name": "evh"}, timeout=60)["status"]
    assert status["runtimeStatus"] == "connected" and "get-sum" in status["tools"]


@needs_node
def test_server_memory(daemon: Daemon, tmp_path: Path) -> None:
    daemon.request("mcpServer/create", {"name": "mem", "config": memory_config(tmp_path / "memory.jsonl")})
    status = daemon.request("mcpServer/start", {"name": "mem"}, timeout=60)["status"]
    assert {"create_entities", "read_graph", "search_nodes"} <= set(status["tools"])
    assert all(tool.get("outputSchema") for tool in status["tools"].values())


def test_stdout_carries_protocol_only_and_stderr_is_json_lines(data_dir: Path) -> None:
    with running_daemon(data_dir) as d:
        d.initialize()
        d.request("mcpServer/create", {"name": "fx", "config": fixture_config()})
        d.request("mcpServer/create", {"name": "junk", "config": command("garbage_stdout.py", "--then-serve")})
        d.request("mcpServer/create", {"name": "crash", "config": command("crash_at_start.py")})
        for name in ("fx", "junk", "crash"):
            d.start_request("mcpServer/start", {"name": name})
        for name in ("fx", "junk", "crash"):
            d.wait_notification("mcpServer/startupStatus/updated",
                                lambda p, n=name: p["name"] == n and p["status"] in ("ready", "failed"), timeout=60)
        assert d.close() == 0
        assert not [m for m in d._messages if "__unparsable__" in m]
        lines = d.stderr().splitlines()
        assert lines
        for line in lines:
            assert isinstance(json.loads(line), dict), line
