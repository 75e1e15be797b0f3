"""A task survives its connection (SPEC §16): when the connection to a server breaks while a tool call's task runs
there (a dropped HTTP stream), the thread reconnects and follows the same task again, so the call still answers
with its result. A task is never cancelled for a loss, and a link that keeps breaking is given up after a few
reconnects (the call's own deadline bounds them all)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from mcp_runtime.session.slot import ProgressCallback, SessionSlot
from mcp_runtime.session.task_call import TaskConnectionLost
from protocol.jsonrpc import AppError

log = structlog.get_logger("mcp_runtime.thread")

MAX_RESUMES = 5


async def across_losses(
    call: Callable[[], Awaitable[dict[str, Any]]],
    reconnected: Callable[[], Awaitable[SessionSlot]],
    *,
    timeout_s: float,
    progress: ProgressCallback | None,
    server: str,
    thread_id: str,
) -> dict[str, Any]:
    """``call``'s result; if its connection breaks while its task runs, the server's slot ``reconnected`` (bounded
    by its startup timeout) follows the same task again."""
    try:
        return await call()
    except TaskConnectionLost as lost:
        task = lost.task
    for attempt in range(1, MAX_RESUMES + 1):
        try:
            slot = await reconnected()
            log.info("task_followed_again", server=server, thread_id=thread_id, attempt=attempt)
            return await slot.resume_task(task, timeout_s=timeout_s, progress=progress)
        except TaskConnectionLost as lost:
            task = lost.task
    message = f"the connection to {server} broke {MAX_RESUMES + 1} times while its task ran"
    raise AppError("connectionLost", message, server=server)
