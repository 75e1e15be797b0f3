"""Which owner serves a read: the management manager, or (with ``threadId``) that thread's runtime (SPEC §3)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from app_server.daemon import RequestContext

if TYPE_CHECKING:
    from mcp_runtime.catalog import CatalogCache
    from mcp_runtime.connection import McpConnection
    from protocol.server import ServerStatus


class Owner(Protocol):
    """What the read handlers need from either owner of MCP connections."""

    catalog: CatalogCache

    def statuses(self) -> list[ServerStatus]: ...

    def status(self, name: str) -> ServerStatus: ...

    def connection(self, name: str) -> McpConnection: ...

    def connections(self) -> dict[str, McpConnection]: ...

    def tool_filters(self) -> tuple[list[str] | None, list[str] | None]: ...


def owner(ctx: RequestContext, thread_id: str | None) -> Owner:
    """The management manager without ``threadId``; the thread's own runtime with it."""
    if thread_id is None:
        return ctx.daemon.manager
    return ctx.daemon.thread_runtime(thread_id, ctx.connection)


def catalog(of: Owner) -> CatalogCache:
    """The owner's tool catalog, refreshed from its connected servers' current tool lists."""
    of.catalog.update({name: (conn.config, conn.tools) for name, conn in of.connections().items()})
    return of.catalog
