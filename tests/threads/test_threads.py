"""Threads, the thread runtime, ``mcpServer/tool/call`` and elicitation, driven black-box through the daemon.

Every wait is on a message (a response, a notification, a server request), never a sleep.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from testing.daemon_client import Daemon, DaemonError, running_daemon, unix_client
from testing.fixtures import everything_config, fixture_config, script
from testing.threads import START_TIMEOUT, call, error_of, listening_daemon, start_call, start_thread, wait_ready

pytestmark = pytest.mark.daemon

# --------------------------------------------------------------------------- lifecycle


def test_thread_lifecycle_restart_and_archive(data_dir: Path) -> None:
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        started = daemon.request("thread/start", {"name": "t1", "cwd": "/tmp", "mcpServers": {"fx": fixture_config()}})
        thread = started["thread"]
        assert thread["name"] == "t1" and thread["cwd"] == "/tmp"
        assert thread["status"] == "active" and thread["servers"] == ["fx"]
        thread_id = thread["id"]
        # thread/start returned at once; the server connects in the background and reports it with the threadId.
        daemon.wait_notification(
            "mcpServer/startupStatus/updated", lambda p: p["threadId"] == thread_id and p["status"] == "starting"
        )
        wait_ready(daemon, thread_id, "fx")
        assert call(daemon, thread_id, "fx", "echo", {"text": "hi"})["content"][0]["text"] == "hi"
        read = daemon.request(
            "mcpServer/resource/read", {"threadId": thread_id, "server": "fx", "uri": "fixture://static/hello"}
        )
        assert read["contents"][0]["text"] == "hello world"
        assert [t["id"] for t in daemon.request("thread/list")["data"]] == [thread_id]
        assert daemon.close() == 0

    assert (data_dir / "threads" / f"{thread_id}.json").is_file()
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        listed = daemon.request("thread/list")["data"]
        assert [t["id"] for t in listed] == [thread_id] and listed[0]["status"] == "active"
        read_back = daemon.request("thread/read", {"threadId": thread_id})
        assert read_back["thread"] == thread
        assert [f["kind"] for f in read_back["facts"]] == ["mcpResourceRead"]
        # Loaded again on first use: the call waits for the server to connect.
        assert call(daemon, thread_id, "fx", "echo", {"text": "again"})["content"][0]["text"] == "again"
        archived = daemon.request("thread/archive", {"threadId": thread_id})["thread"]
        assert archived["status"] == "archived"
        with pytest.raises(DaemonError) as exc:
            call(daemon, thread_id, "fx", "echo", {"text": "x"})
        assert exc.value.reason == "threadArchived" and exc.value.code == -32010
        with pytest.raises(DaemonError) as exc:
            daemon.request("mcpServerStatus/list", {"threadId": thread_id})
        assert exc.value.reason == "threadArchived"
        assert daemon.request("thread/read", {"threadId": thread_id})["thread"]["status"] == "archived"

    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        assert daemon.request("thread/list")["data"][0]["status"] == "archived"


def test_thread_required_and_unknown_thread(daemon: Daemon) -> None:
    for params in ({}, {"threadId": ""}):
        with pytest.raises(DaemonError) as exc:
            daemon.request("mcpServer/tool/call", {**params, "server": "fx", "tool": "echo"})
        assert exc.value.reason == "threadRequired" and exc.value.code == -32602
    for thread_id in ("thr_doesnotexist", "../../etc/passwd"):
        with pytest.raises(DaemonError) as exc:
            daemon.request("mcpServer/tool/call", {"threadId": thread_id, "server": "fx", "tool": "echo"})
        assert exc.value.reason == "unknownThread" and exc.value.code == -32010
        with pytest.raises(DaemonError) as exc:
            daemon.request("thread/read", {"threadId": thread_id})
        assert exc.value.reason == "unknownThread"
        with pytest.raises(DaemonError) as exc:
            daemon.request("mcpTool/listForContext", {"threadId": thread_id})
        assert exc.value.reason == "unknownThread"
    with pytest.raises(DaemonError) as exc:
        daemon.request("thread/read", {})
    assert exc.value.reason == "threadRequired"


def test_server_set_merge_rules(daemon: Daemon) -> None:
    config = fixture_config()
    daemon.request("mcpServer/create", {"name": "fx", "config": config})
    daemon.request("mcpServer/create", {"name": "off", "config": {**config, "enabled": False}})
    # Enabled app servers, plus an identical inline config: deduplicated.
    thread = daemon.request("thread/start", {"mcpServers": {"fx": config, "other": config}})["thread"]
    assert thread["servers"] == ["fx", "other"]
    # The same name with a different config conflicts.
    with pytest.raises(DaemonError) as exc:
        daemon.request("thread/start", {"mcpServers": {"fx": {**config, "args": [*config["args"], "--name", "x"]}}})  # type: ignore[list-item]
    assert exc.value.reason == "conflictingServerConfig" and exc.value.code == -32011
    # strictMcpConfig: no app servers, so no conflict either.
    strict = {"strictMcpConfig": True, "mcpServers": {"fx": {**config, "toolTimeoutMs": 1000}}}
    assert daemon.request("thread/start", strict)["thread"]["servers"] == ["fx"]
    assert daemon.request("thread/start", {"servers": []})["thread"]["servers"] == []
    assert daemon.request("thread/start", {"servers": ["fx"], "mcpServers": {"b": config}})["thread"]["servers"] == [
        "b",
        "fx",
    ]
    with pytest.raises(DaemonError) as exc:
        daemon.request("thread/start", {"servers": ["nope"]})
    assert exc.value.reason == "unknownServer"
    # Inline configs go through the same policy as the store.
    with pytest.raises(DaemonError) as exc:
        daemon.request("thread/start", {"mcpServers": {"bad__name": config}})
    assert exc.value.reason == "invalidServerName"
    with pytest.raises(DaemonError) as exc:
        daemon.request(
            "thread/start",
            {"mcpServers": {"h": {"type": "http", "url": "https://x.example/mcp", "headers": {"X-Api-Key": "v"}}}},
        )
    assert exc.value.reason == "inlineSecret"


# ------------------------------------------------------------------------------- calls


def test_tool_call_outcomes(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    result = call(daemon, thread_id, "fx", "add", {"a": 2, "b": 3})
    assert result["structuredContent"] == {"sum": 5} and not result.get("isError")

    failed = call(daemon, thread_id, "fx", "fail", {"message": "boom"})
    assert failed["isError"] is True and "boom" in failed["content"][0]["text"]

    with pytest.raises(DaemonError) as exc:
        call(daemon, thread_id, "fx", "add", {"a": "two"})
    assert exc.value.reason == "invalidArguments" and exc.value.code == -32602
    paths = {e["path"] for e in exc.value.data["errors"]}
    assert "a" in paths and any("'b' is a required property" in e["message"] for e in exc.value.data["errors"])

    with pytest.raises(DaemonError) as exc:
        call(daemon, thread_id, "fx", "bad_output")
    assert exc.value.reason == "invalidOutput" and exc.value.code == -32014
    assert exc.value.data["result"]["structuredContent"] == {"count": "not-a-number"}

    with pytest.raises(DaemonError) as exc:
        call(daemon, thread_id, "fx", "nope")
    assert exc.value.reason == "unknownTool"
    with pytest.raises(DaemonError) as exc:
        call(daemon, thread_id, "zz", "echo")
    assert exc.value.reason == "unknownServer"

    with pytest.raises(DaemonError) as exc:
        call(daemon, thread_id, "fx", "sleep", {"ms": 10_000}, timeoutMs=300)
    assert exc.value.reason == "timeout" and exc.value.code == -32015
    # Never replayed, and the connection stays usable.
    assert call(daemon, thread_id, "fx", "echo", {"text": "after"})["content"][0]["text"] == "after"

    # A result past the client's message size is answered whole and archived, on the same connection.
    large = call(daemon, thread_id, "fx", "big", {"bytes": 5 * 1024 * 1024})
    assert large["content"][0]["text"] == "x" * (5 * 1024 * 1024)
    assert large["projection"]["truncated"] and large["projection"]["refs"]
    assert call(daemon, thread_id, "fx", "echo", {"text": "back"})["content"][0]["text"] == "back"


def test_tool_filters(daemon: Daemon) -> None:
    config = fixture_config(disabledTools=["sleep"])
    thread_id = start_thread(
        daemon, mcpServers={"fx": config}, allowedTools=["mcp__fx__*"], disabledTools=["mcp__fx__fail"]
    )
    assert call(daemon, thread_id, "fx", "echo", {"text": "ok"})["content"][0]["text"] == "ok"
    for tool in ("fail", "sleep"):
        with pytest.raises(DaemonError) as exc:
            call(daemon, thread_id, "fx", tool, {"message": "x"} if tool == "fail" else {"ms": 1})
        assert exc.value.reason == "toolNotAllowed" and exc.value.code == -32012
    visible = {v["tool"] for v in daemon.request("mcpTool/listForContext", {"threadId": thread_id})["data"]}
    assert "echo" in visible and "fail" not in visible and "sleep" not in visible

    only_echo = start_thread(daemon, mcpServers={"fx": fixture_config()}, allowedTools=["mcp__fx__echo"])
    with pytest.raises(DaemonError) as exc:
        call(daemon, only_echo, "fx", "add", {"a": 1, "b": 2})
    assert exc.value.reason == "toolNotAllowed"
    found = daemon.request("mcpTool/search", {"query": "add", "threadId": only_echo})["data"]
    assert all(v["tool"] == "echo" for v in found)


def test_cancel_reaches_upstream(daemon: Daemon, data_dir: Path) -> None:
    log = data_dir.parent / "upstream.log"
    command = " ".join(shlex.quote(part) for part in script("fixture_server.py"))
    tee = {"command": "sh", "args": ["-c", f"tee {shlex.quote(str(log))} | {command}"]}
    thread_id = start_thread(daemon, mcpServers={"fx": tee})
    wait_ready(daemon, thread_id, "fx")
    request_id = start_call(daemon, thread_id, "fx", "progress", {"steps": 50, "delay_ms": 100})
    daemon.wait_notification("mcpServer/tool/progress", lambda p: p["requestId"] == request_id)
    daemon.notify("$/cancelRequest", {"id": request_id})
    error = error_of(daemon.wait_response(request_id))
    assert error.reason == "cancelled" and error.code == -32800
    # The server was told; a call after it works (it is written after the cancellation, on the same pipe).
    assert call(daemon, thread_id, "fx", "echo", {"text": "x"})["content"][0]["text"] == "x"
    assert "notifications/cancelled" in log.read_text()


def test_list_changed_never_swaps_a_schema_under_a_call(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    assert call(daemon, thread_id, "fx", "change_tools")["content"][0]["text"] == "dynamic_1"
    daemon.wait_notification("mcp:tools_updated", lambda p: p["threadId"] == thread_id and p["server"] == "fx")
    tools = {v["tool"] for v in daemon.request("mcpTool/listForContext", {"threadId": thread_id})["data"]}
    assert "dynamic_1" in tools
    assert call(daemon, thread_id, "fx", "dynamic_1")["content"][0]["text"] == "dynamic_1"
    # The management owner never saw it: thread connections are their own.
    assert all(v["tool"] != "dynamic_1" for v in daemon.request("mcpTool/list")["data"])


# ------------------------------------------------------------------------- elicitation


@pytest.mark.parametrize("protocol", ["2026-07-28", "2025-11-25"])
def test_elicitation_round_trip_both_eras(daemon: Daemon, protocol: str) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config(protocol=protocol)})
    request_id = start_call(daemon, thread_id, "fx", "ask", {"question": "Who are you?"}, turnId="turn-1")
    request = daemon.wait_server_request("mcpServer/elicitation/request", timeout=START_TIMEOUT)
    assert request["id"].startswith("srv-")
    assert request["params"] == {
        "threadId": thread_id,
        "turnId": "turn-1",
        "serverName": "fx",
        "mode": "form",
        "message": "Who are you?",
        "requestedSchema": request["params"]["requestedSchema"],
    }
    assert set(request["params"]["requestedSchema"]["properties"]) == {"name", "age"}
    daemon.answer("srv-999999", {"action": "decline"})  # an unknown id is ignored
    daemon.answer(request["id"], {"action": "accept", "content": {"name": "Ann", "age": 7}})
    resolved = daemon.wait_notification("serverRequest/resolved")
    assert resolved == {"threadId": thread_id, "requestId": request["id"], "action": "accept"}
    result = daemon.wait_response(request_id)["result"]
    assert result["content"][0]["text"] == '{"action": "accept", "content": {"name": "Ann", "age": 7}}'

    # Content that does not fit the requested schema: the server gets cancel, the client gets resolved.
    request_id = start_call(daemon, thread_id, "fx", "ask", {"question": "again"})
    request = daemon.wait_server_request("mcpServer/elicitation/request")
    daemon.answer(request["id"], {"action": "accept", "content": {"name": 5}})
    resolved = daemon.wait_notification("serverRequest/resolved", lambda p: p["requestId"] == request["id"])
    assert (resolved["action"], resolved["reason"]) == ("cancel", "invalidElicitationResponse")
    assert daemon.wait_response(request_id)["result"]["content"][0]["text"] == '{"action": "cancel"}'

    # A cancelled call resolves its pending elicitation (as cancel); a later answer is ignored.
    request_id = start_call(daemon, thread_id, "fx", "ask", {"question": "late"})
    request = daemon.wait_server_request("mcpServer/elicitation/request")
    daemon.notify("$/cancelRequest", {"id": request_id})
    assert error_of(daemon.wait_response(request_id)).reason == "cancelled"
    daemon.wait_notification("serverRequest/resolved", lambda p: p["requestId"] == request["id"])
    daemon.answer(request["id"], {"action": "accept", "content": {"name": "x", "age": 1}})  # too late: ignored
    assert call(daemon, thread_id, "fx", "echo", {"text": "still"})["content"][0]["text"] == "still"
    # Nothing durable: no fact was recorded.
    assert daemon.request("thread/read", {"threadId": thread_id})["facts"] == []


def test_unattributable_elicitation_is_declined(daemon: Daemon) -> None:
    """2025 era: the request does not say which call it belongs to; with two calls in flight it is declined."""
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config(protocol="2025-11-25")})
    wait_ready(daemon, thread_id, "fx")
    sleeping = start_call(daemon, thread_id, "fx", "progress", {"steps": 20, "delay_ms": 100})
    daemon.wait_notification("mcpServer/tool/progress", lambda p: p["requestId"] == sleeping)
    asking = start_call(daemon, thread_id, "fx", "ask", {"question": "whose?"})
    assert daemon.wait_response(asking)["result"]["content"][0]["text"] == '{"action": "decline"}'
    assert "result" in daemon.wait_response(sleeping)
    assert not [m for m in daemon.notifications("serverRequest/resolved")]


def test_everything_server_elicitation_progress_and_sum(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"ev": everything_config()})
    assert call(daemon, thread_id, "ev", "get-sum", {"a": 2, "b": 40})["content"][0]["text"].endswith("42.")

    request_id = start_call(daemon, thread_id, "ev", "trigger-long-running-operation", {"duration": 1, "steps": 3})
    assert "result" in daemon.wait_response(request_id)
    progress = [p for p in daemon.notifications("mcpServer/tool/progress") if p["requestId"] == request_id]
    assert [p["progress"] for p in progress] == [1, 2, 3] and progress[0]["tool"] == "trigger-long-running-operation"

    request_id = start_call(daemon, thread_id, "ev", "trigger-elicitation-request", {})
    request = daemon.wait_server_request("mcpServer/elicitation/request")
    assert request["params"]["serverName"] == "ev" and request["params"]["mode"] == "form"
    daemon.answer(request["id"], {"action": "accept", "content": {"name": "Ann", "check": True, "integer": 7}})
    daemon.wait_notification("serverRequest/resolved", lambda p: p["requestId"] == request["id"])
    content = daemon.wait_response(request_id)["result"]["content"]
    text = " ".join(str(c.get("text", "")) for c in content)
    assert "provided the requested information" in text and "Ann" in text


# ------------------------------------------------------------------ resources and reads


def test_thread_scoped_reads_and_resource_fact(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    wait_ready(daemon, thread_id, "fx")
    statuses = daemon.request("mcpServerStatus/list", {"threadId": thread_id})["data"]
    assert [(s["name"], s["runtimeStatus"]) for s in statuses] == [("fx", "connected")]
    assert daemon.request("mcpServerStatus/list")["data"] == []  # the app has no servers; the thread has its own
    assert any(p["name"] == "greet" for p in daemon.request("mcpPrompt/list", {"threadId": thread_id})["data"])
    prompt = daemon.request("mcpPrompt/get", {"threadId": thread_id, "server": "fx", "name": "greet",
                                              "arguments": {"name": "Bo"}})
    assert "Bo" in str(prompt["messages"])
    resources = daemon.request("mcpResource/list", {"threadId": thread_id})
    assert {r["uri"] for r in resources["resources"]} >= {"fixture://static/hello", "fixture://static/blob"}
    assert daemon.request("mcpTool/search", {"query": "echo", "threadId": thread_id})["data"][0]["tool"] == "echo"

    blob = daemon.request(
        "mcpServer/resource/read",
        {"threadId": thread_id, "server": "fx", "uri": "fixture://static/blob", "preview": True},
    )
    assert blob["contents"][0]["blobBytes"] == 256 and "blob" not in blob["contents"][0]
    daemon.request("mcpServer/resource/read", {"threadId": thread_id, "server": "fx", "uri": "fixture://item/42"})
    facts = daemon.request("thread/read", {"threadId": thread_id})["facts"]
    assert [f["server"] for f in facts] == ["fx", "fx"]
    first = facts[0]
    assert first["uriPreview"] == "fixture://static/blob" and len(first["uriDigest"]) == 64
    assert first["mimeTypes"] == ["application/octet-stream"]
    assert first["contentRefs"][0]["index"] == 0 and first["contentRefs"][0]["bytes"] == 256
    assert set(first) == {"kind", "server", "uriDigest", "uriPreview", "mimeTypes", "contentRefs", "at"}
    assert '"id": "42"' not in str(facts) and "AAEC" not in str(facts)  # never the body or blob
    # Without threadId the management owner serves it and records nothing (the app has no such server).
    with pytest.raises(DaemonError) as exc:
        daemon.request("mcpServer/resource/read", {"server": "fx", "uri": "fixture://static/hello"})
    assert exc.value.reason == "unknownServer"


@pytest.mark.parametrize("protocol", ["2026-07-28", "2025-11-25"])
def test_subscription_with_thread_id(daemon: Daemon, protocol: str) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config(protocol=protocol)})
    wait_ready(daemon, thread_id, "fx")
    uri = "fixture://static/hello"
    daemon.request("mcpResource/subscribe", {"threadId": thread_id, "server": "fx", "uri": uri})
    assert call(daemon, thread_id, "fx", "touch_resource", {"uri": uri})["content"][0]["text"] == f"updated {uri}"
    updated = daemon.wait_notification("mcp:resource_updated", lambda p: p["uri"] == uri)
    assert updated == {"server": "fx", "uri": uri, "threadId": thread_id}
    daemon.request("mcpResource/unsubscribe", {"threadId": thread_id, "server": "fx", "uri": uri})


def test_everything_subscription_with_thread_id(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"ev": everything_config()})
    wait_ready(daemon, thread_id, "ev")
    uri = daemon.request("mcpResource/list", {"threadId": thread_id, "server": "ev"})["resources"][0]["uri"]
    daemon.request("mcpResource/subscribe", {"threadId": thread_id, "server": "ev", "uri": uri})
    call(daemon, thread_id, "ev", "toggle-subscriber-updates", {})
    updated = daemon.wait_notification("mcp:resource_updated", lambda p: p["uri"] == uri, timeout=START_TIMEOUT)
    assert updated["threadId"] == thread_id and updated["server"] == "ev"


# --------------------------------------------------------------- several connections


def test_second_connection_neither_sees_nor_answers_elicitation(data_dir: Path) -> None:
    with listening_daemon(data_dir) as (daemon, socket_path), unix_client(socket_path) as other:
        other.initialize()
        thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
        # The other connection references the thread: it becomes a subscriber of its thread-scoped events.
        assert other.request("thread/read", {"threadId": thread_id})["thread"]["id"] == thread_id
        wait_ready(daemon, thread_id, "fx")

        # Progress goes to the caller only.
        request_id = start_call(daemon, thread_id, "fx", "progress", {"steps": 2, "delay_ms": 10})
        assert "result" in daemon.wait_response(request_id)
        assert len([p for p in daemon.notifications("mcpServer/tool/progress") if p["requestId"] == request_id]) == 2

        request_id = start_call(daemon, thread_id, "fx", "ask", {"question": "mine?"})
        request = daemon.wait_server_request("mcpServer/elicitation/request")
        other.answer(request["id"], {"action": "accept", "content": {"name": "Mallory", "age": 1}})  # ignored
        # A list change while the ask is in flight: the catalog is refreshed only once no call is in flight.
        assert call(other, thread_id, "fx", "change_tools")["content"][0]["text"] == "dynamic_1"
        daemon.answer(request["id"], {"action": "accept", "content": {"name": "Ann", "age": 2}})
        assert "Ann" in daemon.wait_response(request_id)["result"]["content"][0]["text"]
        # Thread-scoped events reach every subscriber of the thread.
        for client in (daemon, other):
            client.wait_notification("mcp:tools_updated", lambda p: p["threadId"] == thread_id)

        assert other.notifications("mcpServer/tool/progress") == []
        assert not any(m.get("method") == "mcpServer/elicitation/request" for m in other._messages)
        assert other.notifications("serverRequest/resolved") == []

        # App-scoped notifications go to every initialized connection.
        daemon.request("mcpServer/create", {"name": "app", "config": fixture_config()})
        daemon.request("mcpServer/start", {"name": "app"}, timeout=START_TIMEOUT)
        for client in (daemon, other):
            client.wait_notification(
                "mcpServer/startupStatus/updated", lambda p: p["threadId"] is None and p["status"] == "ready"
            )


def test_thread_events_only_to_subscribers(data_dir: Path) -> None:
    with listening_daemon(data_dir) as (daemon, socket_path), unix_client(socket_path) as other:
        other.initialize()
        thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
        wait_ready(daemon, thread_id, "fx")
        # The other connection never referenced the thread: the call below is its first reference.
        assert not [p for p in other.notifications("mcpServer/startupStatus/updated") if p["threadId"] == thread_id]
        call(daemon, thread_id, "fx", "change_tools")
        daemon.wait_notification("mcp:tools_updated", lambda p: p["threadId"] == thread_id)
        # A round trip on the other connection orders its stream after the publication above.
        other.request("thread/list")
        assert other.notifications("mcp:tools_updated") == []


def test_closing_the_connection_cancels_its_elicitation(data_dir: Path) -> None:
    with listening_daemon(data_dir) as (daemon, socket_path):
        thread_id = start_thread(daemon, mcpServers={"fx": fixture_config(protocol="2025-11-25")})
        wait_ready(daemon, thread_id, "fx")
        with unix_client(socket_path) as other:
            other.initialize()
            start_call(other, thread_id, "fx", "ask", {"question": "bye"})
            other.wait_server_request("mcpServer/elicitation/request")
        # The abandoned call resolved as cancel upstream; the server is free for the next call.
        assert call(daemon, thread_id, "fx", "echo", {"text": "next"})["content"][0]["text"] == "next"
