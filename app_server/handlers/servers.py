"""``mcpServer/list|create|update|delete|enabled/set``: the app's server store."""

from __future__ import annotations

from app_server.daemon import RequestContext
from app_server.handlers.paging import page
from app_server.handlers.registry import method
from mcp_runtime.config import check_server, redacted
from mcp_runtime.store import StoredServer
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


@method("mcpServer/list", ServerListParams)
def list_servers(ctx: RequestContext, params: ServerListParams) -> ServerListResult:
    data, next_cursor = page(ctx.daemon.store.list(), params.cursor, params.limit)
    return ServerListResult(data=[record(s) for s in data], next_cursor=next_cursor)


@method("mcpServer/create", ServerCreateParams)
def create(ctx: RequestContext, params: ServerCreateParams) -> ServerResult:
    check_server(params.name, params.config)
    return ServerResult(server=record(ctx.daemon.store.create(params.name, params.config)))


@method("mcpServer/update", ServerUpdateParams)
async def update(ctx: RequestContext, params: ServerUpdateParams) -> ServerResult:
    check_server(params.name, params.config)
    server = ctx.daemon.store.update(params.name, params.config, params.expected_revision)
    await ctx.daemon.config_changed(params.name)
    return ServerResult(server=record(server))


@method("mcpServer/delete", ServerNameParams)
async def delete(ctx: RequestContext, params: ServerNameParams) -> Empty:
    ctx.daemon.store.require(params.name)
    await ctx.daemon.forget_server(params.name)
    ctx.daemon.store.delete(params.name)
    return Empty()


@method("mcpServer/enabled/set", ServerEnabledSetParams)
async def set_enabled(ctx: RequestContext, params: ServerEnabledSetParams) -> ServerResult:
    server = ctx.daemon.store.set_enabled(params.name, params.enabled, params.app)
    if params.app is None:
        await ctx.daemon.config_changed(params.name)
    return ServerResult(server=record(server))
