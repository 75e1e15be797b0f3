"""A call an HTTP server refused because it no longer knows the session (it restarted: ``sessionExpired``) was never
run, so it is sent once more on a new session rather than failed (issue 46)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from mcp_runtime.session.slot import SessionSlot
from protocol.jsonrpc import AppError

T = TypeVar("T")


async def resent_on_new_session(
    send: Callable[[SessionSlot], Awaitable[T]], slot: SessionSlot, reconnected: Callable[[], Awaitable[SessionSlot]]
) -> T:
    """``send(slot)``; when the server refused it for an unknown session, ``send`` again on the slot
    ``reconnected`` gives (bounded by the server's startup timeout)."""
    try:
        return await send(slot)
    except AppError as exc:
        if exc.details.get("detail") != "sessionExpired":
            raise
    return await send(await reconnected())
