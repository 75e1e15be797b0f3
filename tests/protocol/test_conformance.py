"""The test client's check of everything the daemon sends, against the published schema: it accepts what the
daemon's own models and errors produce, and names the drift in what they do not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app_server.wire.handshake import Client, initialize_line
from protocol.jsonrpc import AppError
from testing.daemon_client import conformance

pytestmark = pytest.mark.daemon


def _method_is(method: str | None) -> Any:
    return lambda _request_id: method


def test_what_the_daemon_builds_conforms() -> None:
    checks = conformance()
    store = {"kind": "file", "backend": "files in the data dir"}
    initialize = json.loads(initialize_line(1, Client("app", "1", frozenset(), False), "/d", store))
    assert checks.problem(initialize, _method_is("initialize")) is None
    for error in (AppError("unknownServer", "no server named 'x'", server="x"), AppError("internal", "internal error")):
        assert checks.problem({"jsonrpc": "2.0", "id": 2, "error": error.to_error()}, _method_is(None)) is None
    assert checks.problem({"jsonrpc": "2.0", "id": 3, "result": {"data": []}}, _method_is("mcpServer/list")) is None


@pytest.mark.parametrize(
    ("message", "method", "named"),
    [
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, "mcpServer/list", "mcpServer/list result"),
        ({"jsonrpc": "2.0", "id": 1, "result": {"data": [], "extra": 1}}, "mcpServer/list", "extra"),
        ({"jsonrpc": "2.0", "id": 1, "result": {"data": []}}, None, "no request"),
        ({"id": 1, "result": {"data": []}}, "mcpServer/list", "jsonrpc"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "m", "data": {"reason": "unknownServer"}}},
         None, "error"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "m"}}, None, "error"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "m", "data": {"reason": "oops"}}},
         None, "error"),
        ({"jsonrpc": "2.0", "method": "mcp:server_started", "params": {}}, None, "not a published notification"),
        ({"jsonrpc": "2.0", "method": "mcpServer/startupStatus/updated", "params": {"name": "x"}}, None,
         "StartupStatusUpdated"),
        ({"jsonrpc": "2.0", "id": "srv-1", "method": "mcpServer/elicitation/request", "params": {}}, None,
         "ElicitationRequest"),
        ({"__unparsable__": "{"}, None, "not a JSON line"),
    ],
)
def test_drift_is_named(message: dict[str, Any], method: str | None, named: str) -> None:
    problem = conformance().problem(message, _method_is(method))
    assert problem is not None and named in problem
