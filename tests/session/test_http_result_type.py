"""SEP-2322 on the 2026-07-28 wire: a result without ``resultType`` is ``complete`` (the SDK refuses it as malformed,
so the daemon's HTTP streams fill the default in for the answers to 2026-era requests, and only for those).

The conformance scenario ``sep-2322-client-request-state`` checks the same through the daemon against the
harness' server; here the stream adapter is checked message by message."""

from __future__ import annotations

from typing import Any

from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCRequest, JSONRPCResponse

from mcp_runtime.session.http import VERSION_META, _CompleteByDefault


def request(request_id: int, version: str | None) -> SessionMessage:
    params: dict[str, Any] = {"name": "t", "arguments": {}}
    if version is not None:
        params["_meta"] = {VERSION_META: version}
    return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params=params))


def test_only_answers_to_2026_requests_get_the_default() -> None:
    fix = _CompleteByDefault()
    for item in (request(1, "2026-07-28"), request(2, None), request(3, "2026-07-28"), request(4, "2026-07-28")):
        fix.sent(item)

    def received(request_id: int, result: dict[str, Any]) -> dict[str, Any]:
        message = SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result))
        return fix.received(message).message.result  # type: ignore[no-any-return]

    assert received(1, {"content": []}) == {"content": [], "resultType": "complete"}
    assert received(2, {"content": []}) == {"content": []}  # a 2025-era request: its result is left as it came
    assert received(3, {"resultType": "input_required", "inputRequests": {}})["resultType"] == "input_required"
    assert received(1, {"content": []}) == {"content": []}  # answered already: an id is not remembered twice
    assert received(4, {"content": "not a list"}) == {"content": "not a list"}  # malformed: the SDK refuses it
