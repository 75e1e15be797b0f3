"""Which HTTP refusals say a server no longer knows the session (issue 46): the words servers use, and not an error
that merely names a tool's own session."""

from __future__ import annotations

import json

import pytest

from mcp_runtime.session.http_refusal import session_gone


def _error(message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "error": {"code": -32000, "message": message}}).encode()


@pytest.mark.parametrize(
    ("status", "body", "gone"),
    [
        (404, _error("Session not found"), True),  # the official SDKs' servers
        (404, b"Not Found", True),  # the spec's word for an ended session, whatever the body
        (400, _error("Bad Request: No valid session ID provided"), True),  # npm server-everything
        (400, _error("Bad Request: Missing session ID"), True),
        (400, _error("Bad Request: Mcp-Session-Id header is required"), True),
        (400, _error("Invalid params for create_session"), False),
        (400, _error("Bad Request: Server not initialized"), False),
        (500, _error("Session not found"), False),
    ],
)
def test_session_gone(status: int, body: bytes, gone: bool) -> None:
    assert session_gone(status, body) is gone
