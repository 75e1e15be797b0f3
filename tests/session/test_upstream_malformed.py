"""Malformed upstream messages, driven black-box through the daemon against a relay that corrupts replies.

A malformed reply carrying the id of a call in flight fails that call at once with ``invalidOutput`` and
``data.detail``; a line that is not JSON is skipped and counted, and the connection keeps working. The tool
timeout is far longer than the client's wait, so a call that waited it out fails the test with a TimeoutError,
never by a timing assertion. Non-finite numbers in arguments are refused before anything reaches the server, and
in a result's structuredContent they are invalidOutput.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_runtime.limits import MAX_SERVER_MESSAGE_BYTES
from scripts.smoke.fixtures.bad_replies import OVERSIZED_BYTES
from testing.daemon_client import Daemon, DaemonError, running_daemon
from testing.fixtures import script

pytestmark = pytest.mark.daemon

START_TIMEOUT = 40.0
CALL_WAIT = 20.0
"""The client's wait for one call; the server's tool timeout (below) is far longer."""
TOOL_TIMEOUT_MS = 120_000


@pytest.fixture
def session(data_dir: Path, tmp_path: Path) -> Iterator[tuple[Daemon, str, Path]]:
    yield from _session(data_dir, tmp_path, "auto")


@pytest.fixture
def session_2025(data_dir: Path, tmp_path: Path) -> Iterator[tuple[Daemon, str, Path]]:
    """The 2025 era: its results are taken as the dicts the session checked, not through the result model."""
    yield from _session(data_dir, tmp_path, "2025-11-25")


def _session(data_dir: Path, tmp_path: Path, protocol: str) -> Iterator[tuple[Daemon, str, Path]]:
    record = tmp_path / "calls.jsonl"
    command = script("bad_replies.py", "--record", str(record))
    config = {"command": command[0], "args": command[1:], "toolTimeoutMs": TOOL_TIMEOUT_MS, "protocol": protocol}
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        thread_id = daemon.request("thread/start", {"mcpServers": {"bad": config}})["thread"]["id"]
        daemon.wait_notification(
            "mcpServer/startupStatus/updated",
            lambda p: p["threadId"] == thread_id and p["name"] == "bad" and p["status"] == "ready",
            timeout=START_TIMEOUT,
        )
        yield daemon, thread_id, record


def echo(daemon: Daemon, thread_id: str, text: str, **arguments: Any) -> Any:
    params = {"threadId": thread_id, "server": "bad", "tool": "echo", "arguments": {"text": text, **arguments}}
    return daemon.request("mcpServer/tool/call", params, timeout=CALL_WAIT)


def echoed(result: dict[str, Any]) -> str:
    text: str = result["content"][0]["text"]
    return text


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("bad-utf8", "not valid UTF-8"),
        ("lone-surrogate", "lone surrogate"),
        ("bad-shape", "not a valid JSON-RPC response"),
        ("bad-result", "content"),
    ],
)
def test_malformed_reply_fails_its_call_at_once(session: tuple[Daemon, str, Path], kind: str, said: str) -> None:
    daemon, thread_id, _ = session
    with pytest.raises(DaemonError) as failed:
        echo(daemon, thread_id, kind)
    error = failed.value
    assert (error.code, error.reason) == (-32014, "invalidOutput"), error
    assert said in error.data["detail"] and len(error.data["detail"]) <= 300
    assert error.data["server"] == "bad"
    assert echoed(echo(daemon, thread_id, "still here")) == "still here"


@pytest.mark.parametrize(("kind", "said"), [("bad-shape", "not a valid JSON-RPC response"), ("bad-result", "content")])
def test_malformed_reply_fails_its_call_at_once_in_a_2025_session(
    session_2025: tuple[Daemon, str, Path], kind: str, said: str
) -> None:
    daemon, thread_id, _ = session_2025
    with pytest.raises(DaemonError) as failed:
        echo(daemon, thread_id, kind)
    assert (failed.value.code, failed.value.reason) == (-32014, "invalidOutput"), failed.value
    assert said in failed.value.data["detail"]
    result = echo(daemon, thread_id, "still here", extra=[1, 2])
    assert echoed(result) == "still here" and set(result) >= {"content", "projection"}
    assert result["isError"] is False  # as a 2026-era result reads


def test_lines_that_are_not_json_are_skipped_and_counted(session: tuple[Daemon, str, Path]) -> None:
    daemon, thread_id, _ = session
    assert echoed(echo(daemon, thread_id, "garbage-first")) == "garbage-first"
    assert echoed(echo(daemon, thread_id, "stray-id")) == "stray-id"
    assert echoed(echo(daemon, thread_id, "after")) == "after"
    counts = [
        entry["skippedLines"]
        for entry in map(_log_entry, daemon.stderr().splitlines())
        if entry.get("event") == "server_lines_skipped" and entry.get("server") == "bad"
    ]
    assert counts == [1, 2]


def _log_entry(line: str) -> dict[str, Any]:
    try:
        entry = json.loads(line)
    except ValueError:
        return {}
    return entry if isinstance(entry, dict) else {}


def test_non_finite_arguments_never_reach_the_server(session: tuple[Daemon, str, Path]) -> None:
    daemon, thread_id, record = session
    # 1e999 overflows a float and the literal Infinity is not JSON: the wire refuses both (-32700, id null)
    # before any handler runs, so neither can reach the server as null.
    line = (
        '{"jsonrpc":"2.0","id":"inf","method":"mcpServer/tool/call","params":{"threadId":"THREAD","server":"bad",'
        '"tool":"echo","arguments":{"text":"x","huge":1e999,"deep":[{"small":-1e999}]}}}\n'
    ).replace("THREAD", thread_id)
    for raw in (line, line.replace("1e999", "Infinity")):
        daemon.send_raw(raw.encode())
        refused = daemon.wait_for(lambda m: "error" in m and m.get("id") is None, CALL_WAIT)
        assert (refused["error"]["code"], refused["error"]["data"]["reason"]) == (-32700, "parseError"), refused
    assert echoed(echo(daemon, thread_id, "after")) == "after"
    received = [json.loads(entry) for entry in record.read_text().splitlines()]
    assert [call["arguments"] for call in received if call.get("name") == "echo"] == [{"text": "after"}]


def test_detail_of_a_reply_with_a_bad_shape_names_the_problem() -> None:
    from mcp_types import JSONRPCRequest

    from mcp_runtime.session.upstream_guard import SkippedLine, UpstreamGuard

    guard = UpstreamGuard()
    guard.sent(JSONRPCRequest(jsonrpc="2.0", id=7, method="tools/call"))
    failed = guard.received(b'{"jsonrpc":"2.0","id":7,"error":{"code":"x"}}')
    error = failed.message.error  # type: ignore[union-attr]
    assert error.data["mcpAppServerReason"] == "invalidOutput"
    assert error.data["detail"].startswith("not a valid JSON-RPC error: error.code")
    # The same id again: no longer in flight, so the line is only skipped.
    again = guard.received(b'{"jsonrpc":"2.0","id":7,"error":{"code":"x"}}')
    assert isinstance(again, SkippedLine) and again.count == 1
    assert isinstance(guard.received(b"[" * 100_000), SkippedLine)


@pytest.mark.parametrize(
    ("kind", "said"),
    [("lone-surrogate", "Invalid JSON"), ("bad-shape", "JSONRPCResponse.result"), ("bad-result", "content")],
)
def test_malformed_http_reply_fails_its_call_at_once(data_dir: Path, kind: str, said: str) -> None:
    from scripts.smoke.fixtures.launch import http_script

    with http_script("bad_replies.py", "--http") as url, running_daemon(data_dir) as daemon:
        daemon.initialize()
        config = {"type": "http", "url": url, "toolTimeoutMs": TOOL_TIMEOUT_MS}
        thread_id = daemon.request("thread/start", {"mcpServers": {"bad": config}})["thread"]["id"]
        daemon.wait_notification(
            "mcpServer/startupStatus/updated",
            lambda p: p["threadId"] == thread_id and p["name"] == "bad" and p["status"] == "ready",
            timeout=START_TIMEOUT,
        )
        with pytest.raises(DaemonError) as failed:
            echo(daemon, thread_id, kind)
        assert (failed.value.code, failed.value.reason) == (-32014, "invalidOutput"), failed.value
        assert said in failed.value.data["detail"] and len(failed.value.data["detail"]) <= 300
        assert echoed(echo(daemon, thread_id, "still here")) == "still here"


@pytest.mark.parametrize("era", ["session", "session_2025"])
def test_non_finite_structured_content_is_invalid_output(request: pytest.FixtureRequest, era: str) -> None:
    """``NaN``/``Infinity`` are not JSON: they would reach the client as ``null``. The call is ``invalidOutput``,
    with the result shown in ``data`` as every other invalidOutput shows it."""
    daemon, thread_id, _ = request.getfixturevalue(era)
    with pytest.raises(DaemonError) as failed:
        echo(daemon, thread_id, "non-finite")
    error = failed.value
    assert (error.code, error.reason, error.data["server"]) == (-32014, "invalidOutput", "bad"), error
    paths = sorted(issue["path"] for issue in error.data["errors"])
    assert paths == ["huge", "peak", "ratio"], error.data
    assert error.data["result"]["content"] == [{"type": "text", "text": "n"}]
    assert error.data["result"]["structuredContent"]["ok"] == 1.5
    assert echoed(echo(daemon, thread_id, "still here")) == "still here"


def test_an_answer_past_the_server_message_limit_fails_its_call_alone(session_2025: tuple[Daemon, str, Path]) -> None:
    """A reply of more than 160 MiB (its id at its end) is read and let go, never held: its call fails
    ``responseTooLarge`` with the size, and the same connection answers the next call (no restart)."""
    daemon, thread_id, _ = session_2025
    with pytest.raises(DaemonError) as refused:
        echo(daemon, thread_id, "oversized")
    assert (refused.value.code, refused.value.reason) == (-32013, "responseTooLarge")
    assert refused.value.data["size"] > OVERSIZED_BYTES and refused.value.data["limit"] == MAX_SERVER_MESSAGE_BYTES
    assert echoed(echo(daemon, thread_id, "after")) == "after"
    starts = daemon.notifications("mcpServer/startupStatus/updated")
    assert [u["status"] for u in starts if u["threadId"] == thread_id].count("starting") == 1, "never restarted"
