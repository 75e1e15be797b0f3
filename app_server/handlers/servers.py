"""``mcpServer/list|create|update|delete|enabled/set``: the app's server store."""

from __future__ import annotations

from app_server.daemon import RequestContext
from app_server.handlers.paging import page
from mcp_runtime import StoredServer, check_server, redacted
from protocol.base import Empty
from protocol.server import (
    ServerCreateParams,
    ServerEnabledSetParams,
    ServerListParams,
    ServerListResult,
    ServerNameParams,
    ServerRecord,
    ServerResult,
    ServerUpdateParams,
)


def record(server: StoredServer) -> ServerRecord:
    """The list view of a stored server: secrets replaced by ``***``."""
    return ServerRecord.model_validate(
        {
            "name": server.name,
            "config": redacted(server.config),
            "enabled": server.config.enabled,
            "revision": server.revision,
            "source": server.source,
            "createdAt": server.created_at,
            "updatedAt": server.updated_at,
        }
    )


def list_servers(ctx: RequestContext, params: ServerListParams) -> ServerListResult:
    data, next_cursor = page(ctx.daemon.store.list(), params.cursor, params.limit)
    return ServerListResult(data=[record(s) for s in data], next_cursor=next_cursor)


def create(ctx: RequestContext, params: ServerCreateParams) -> ServerResult:
    check_server(params.name, params.config)
    return ServerResult(server=record(ctx.daemon.store.create(params.name, params.config)))


async def update(ctx: RequestContext, params: ServerUpdateParams) -> ServerResult:
    check_server(params.name, params.config)
    server = ctx.daemon.store.update(params.name, params.config, params.expected_revision)
    await ctx.daemon.config_changed(params.name)
    return ServerResult(server=record(server))


async def delete(ctx: RequestContext, params: ServerNameParams) -> Empty:
    ctx.daemon.store.require(params.name)
    await ctx.daemon.forget_server(params.name)
    ctx.daemon.store.delete(params.name)
    return Empty()


async def set_enabled(ctx: RequestContext, params: ServerEnabledSetParams) -> ServerResult:
    server = ctx.daemon.store.set_enabled(params.name, params.enabled, params.app)
    if params.app is None:
        await ctx.daemon.config_changed(params.name)
    return ServerResult(server=record(server))


ROUTES = {
    "mcpServer/list": list_servers,
    "mcpServer/create": create,
    "mcpServer/update": update,
    "mcpServer/delete": delete,
    "mcpServer/enabled/set": set_enabled,
}
