"""Routing a server's elicitation to the one tool call waiting on it (SPEC §7), for a thread runtime.

In the 2026 era the SDK drives the input-required rounds inside the calling task, so a context variable names
the call; in the 2025 era the request arrives on the session's receive loop and is attributed only when exactly
one call is in flight on that server in this thread. Anything that cannot be attributed, and every URL-mode
request, is declined. Each call brings its own ``ask`` callback: the runtime knows no client connection.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog

from mcp_runtime.catalog.schemas import errors, validator
from protocol.elicitation import ElicitationRequest

log = structlog.get_logger("mcp_runtime.elicitation")

AskCallback = Callable[[ElicitationRequest], Awaitable[dict[str, Any] | None]]
"""Sends the elicitation to the calling client and returns its raw answer (None: no usable answer)."""


@dataclass(eq=False)
class Call:
    """One tool call in flight: who to ask when the server elicits, and the elicitations it is waiting on."""

    owner: object
    server: str
    turn_id: str | None
    ask: AskCallback | None
    elicitations: set[anyio.CancelScope] = field(default_factory=set)

    def cancel_elicitations(self) -> None:
        for scope in tuple(self.elicitations):
            scope.cancel()


current_call: contextvars.ContextVar[Call | None] = contextvars.ContextVar("mcp_thread_call", default=None)


def attribute(owner: object, server: str, calls: list[Call]) -> Call | None:
    """The one waiting call an elicitation belongs to, or None (then it is declined)."""
    call = current_call.get()
    if call is not None:
        return call if call.owner is owner and call.server == server and call in calls else None
    return calls[0] if len(calls) == 1 else None


async def elicit(thread_id: str, server: str, call: Call | None, params: Any) -> Any:
    """Ask the calling client (form mode only) and turn its answer into the SDK result."""
    from mcp_types import ElicitResult

    if getattr(params, "mode", "form") != "form":
        return ElicitResult(action="decline")  # URL mode is declined (SPEC §7)
    if call is None or call.ask is None:
        log.info("elicitation declined: no single waiting call", server=server, thread_id=thread_id)
        return ElicitResult(action="decline")
    raw_schema = params.requested_schema
    schema: dict[str, Any] = (
        raw_schema.model_dump(by_alias=True, mode="json", exclude_none=True)
        if hasattr(raw_schema, "model_dump")
        else dict(raw_schema)
    )
    request = ElicitationRequest(
        thread_id=thread_id,
        turn_id=call.turn_id,
        server_name=server,
        mode="form",
        message=params.message,
        requested_schema=schema,
    )
    answer: dict[str, Any] | None = None
    with anyio.CancelScope() as scope:
        call.elicitations.add(scope)
        try:
            answer = await call.ask(request)
        finally:
            call.elicitations.discard(scope)
    return elicit_result(answer, schema, server)


def elicit_result(answer: dict[str, Any] | None, schema: dict[str, Any], server: str) -> Any:
    """The client's answer as the SDK result; anything unusable (or content not fitting the schema) is cancel."""
    from mcp_types import ElicitResult

    if answer is None:
        return ElicitResult(action="cancel")
    action = answer.get("action")
    content = answer.get("content")
    if action not in ("accept", "decline", "cancel") or (content is not None and not isinstance(content, dict)):
        return ElicitResult(action="cancel")
    if action != "accept":
        return ElicitResult(action=action)
    problems = errors(validator(schema), content if content is not None else {})
    if problems:
        log.info("elicitation answer does not fit the requested schema: cancel", server=server, errors=len(problems))
        return ElicitResult(action="cancel")
    return ElicitResult(action="accept", content=content)
