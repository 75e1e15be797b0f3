"""Server-originated elicitation (SPEC §7): the one server→client request and its resolution event."""

from __future__ import annotations

from typing import Any, Literal

from protocol.base import WireModel


class ElicitationRequest(WireModel):
    """``mcpServer/elicitation/request``: nothing else crosses the boundary (no session or raw MCP ids)."""

    thread_id: str
    turn_id: str | None
    server_name: str
    mode: Literal["form"]
    message: str
    requested_schema: dict[str, Any]


class ElicitationResponse(WireModel):
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class ValidationIssue(WireModel):
    """One way an answer misses the form: where (a JSON pointer-ish path, "" for the whole) and why."""

    path: str
    message: str


class ServerRequestResolved(WireModel):
    """``serverRequest/resolved``: sent to the answering connection before the answer goes upstream.

    ``action`` is what the server is told. ``reason: "invalidElicitationResponse"`` (with ``errors``) marks a
    ``cancel`` the daemon chose because the answer did not fit ``requestedSchema`` — not the user's cancel.
    """

    thread_id: str
    request_id: str | int
    action: Literal["accept", "decline", "cancel"]
    reason: Literal["invalidElicitationResponse"] | None = None
    errors: list[ValidationIssue] | None = None
