"""``--trace FILE`` under attack (issue 33.2, SPEC §1): a rotation that cannot reopen FILE stops tracing and never
writes through the descriptor it closed; a FIFO (or any file that is not regular) is refused at start; secrets are
masked by the one secret-name rule whatever the value's type, and form values wherever a later message quotes
them; a request whose params fail validation is recorded by its method, id and size only."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import ROOT, running_daemon
from testing.fixtures import fixture_config
from testing.threads import START_TIMEOUT, start_thread

pytestmark = pytest.mark.daemon


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_rotation_that_cannot_reopen_stops_tracing_and_never_writes_through_the_closed_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app_server.wire import trace as trace_module

    monkeypatch.setattr(trace_module, "FILE_MAX", 4096)
    folder = tmp_path / "traces"
    folder.mkdir()
    trace = trace_module.Trace(folder / "trace.jsonl")
    message = {"jsonrpc": "2.0", "id": 1, "method": "mcpServer/list", "params": {"cursor": "c" * 300}}
    trace.incoming("stdio", message, 400)
    shutil.rmtree(folder)  # FILE cannot be moved to FILE.1 nor made again
    bystander = tmp_path / "bystander.jsonl"
    for _ in range(40):
        trace.incoming("stdio", message, 400)  # the rotation fails in here
    fd = os.open(bystander, os.O_WRONLY | os.O_CREAT, 0o600)  # likely the number the trace closed
    try:
        for _ in range(40):
            trace.incoming("stdio", message, 400)
            trace.outgoing("stdio", json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"data": []}}).encode())
    finally:
        os.close(fd)
        trace.close()
    assert bystander.read_bytes() == b"", "trace lines reached a descriptor the trace had closed"


def test_a_trace_file_that_is_not_regular_is_refused_at_once(data_dir: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "app_server", "--data-dir", str(data_dir), "--trace", str(fifo)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stderr == f"mcp-app-server: the trace file {fifo} is not a regular file\n"
    done = subprocess.run(
        [sys.executable, "-m", "app_server", "--data-dir", str(data_dir), "--trace", "/dev/null"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (done.returncode, done.stderr) == (2, "mcp-app-server: the trace file /dev/null is not a regular file\n")


def test_masking_by_the_one_rule_whatever_the_type_and_typed_values_wherever_they_are_quoted(
    data_dir: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    secrets = {"pk-1f2e3d", "ak-9a8b7c", "au-5d4c3b", "list-env-77", "Zanzibar-Quill"}
    with running_daemon(data_dir, args=("--trace", str(trace))) as daemon:
        daemon.initialize()
        daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config()})
        refused = daemon.start_request(
            "mcpServer/create", {"name": "bad", "config": {"command": "x", "env": ["K=list-env-77"]}}
        )
        assert daemon.wait_response(refused)["error"]["data"]["reason"] == "invalidParams"
        thread_id = start_thread(daemon, servers=["fx"])
        arguments = {"text": "hello", "private_key": "pk-1f2e3d", "api-key": {"v": "ak-9a8b7c"}, "auth": ["au-5d4c3b"]}
        call = daemon.start_request(
            "mcpServer/tool/call", {"threadId": thread_id, "server": "fx", "tool": "echo", "arguments": arguments}
        )
        daemon.wait_response(call, timeout=START_TIMEOUT)  # refused or answered: only the trace matters here
        ask = daemon.start_request(
            "mcpServer/tool/call",
            {"threadId": thread_id, "server": "fx", "tool": "ask", "arguments": {"question": "who?"}},
        )
        form = daemon.wait_server_request("mcpServer/elicitation/request", timeout=START_TIMEOUT)
        daemon.answer(form["id"], {"action": "accept", "content": {"name": "Zanzibar-Quill", "age": 4242}})
        result = daemon.wait_response(ask, timeout=START_TIMEOUT)["result"]
        assert "Zanzibar-Quill" in result["content"][0]["text"], "the client gets the echo"
    text = trace.read_text()
    for secret in secrets:
        assert secret not in text, secret
    assert "4242" not in text
    records = _records(trace)
    [bad] = [r["message"] for r in records if r["dir"] == "in" and r["message"].get("id") == refused]
    assert bad == {"bytes": bad["bytes"], "omitted": "invalid params", "id": refused, "method": "mcpServer/create"}
    calls = [r["message"] for r in records if r["dir"] == "in" and r["message"].get("method") == "mcpServer/tool/call"]
    assert calls[0]["params"]["arguments"] == {"text": "hello", "private_key": "***", "api-key": "***", "auth": "***"}


def test_env_and_headers_of_any_type_and_secret_named_members_of_any_type_are_masked() -> None:
    from app_server.wire.trace import redact

    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "x",
        "params": {
            "env": ["A=1"],
            "headers": "Authorization: Bearer t",
            "config": {"env": {"K": {"nested": "v"}}, "headers": {"X": 3}},
            "credentials": {"user": "u", "pass": "p"},
            "tools": {
                "get_token": {"name": "get_token", "inputSchema": {"properties": {"api_key": {"type": "string"}}}}
            },
        },
    }
    params = redact(message)["params"]
    assert params["env"] == "***" and params["headers"] == "***"
    assert params["config"] == {"env": {"K": "***"}, "headers": {"X": "***"}}
    assert params["credentials"] == "***"
    assert params["tools"]["get_token"]["inputSchema"]["properties"]["api_key"] == {"type": "string"}, "names walked"
