"""Which owner serves a read: the management manager, or (with ``threadId``) that thread's runtime (SPEC §3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app_server.context import RequestContext

if TYPE_CHECKING:
    from mcp_runtime import McpClientManager, McpThreadRuntime


def owner(ctx: RequestContext, thread_id: str | None) -> McpClientManager | McpThreadRuntime:
    """The management manager without ``threadId``; the thread's own runtime with it."""
    if thread_id is None:
        return ctx.daemon.manager
    return ctx.daemon.thread_runtime(thread_id, ctx.connection)
