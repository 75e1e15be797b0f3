"""Which owner serves a read: the management manager, or (with ``threadId``) that thread's runtime (SPEC §3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app_server.context import RequestContext

if TYPE_CHECKING:
    from mcp_runtime import McpClientManager, McpThreadRuntime


def owner(ctx: RequestContext, thread_id: str | None) -> McpClientManager | McpThreadRuntime:
    """The management manager without ``threadId``; the thread's own runtime with it, which the asking connection
    follows from then on (its events reach the connection)."""
    if thread_id is None:
        return ctx.daemon.manager
    runtime = ctx.daemon.thread_runtime(thread_id)
    ctx.daemon.threads.follow(runtime.thread_id, ctx.connection)
    return runtime
