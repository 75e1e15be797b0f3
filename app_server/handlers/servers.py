"""``mcpServer/list|create|update|delete|enabled/set``: the app's server store."""

from __future__ import annotations

from app_server.context import RequestContext
from app_server.handlers.paging import page
from app_server.handlers.registry import method
from mcp_runtime import StoredServer, check_server, patched, policy, redacted, restore_redacted
from protocol.base import Empty
from protocol.config import McpServerConfig
from protocol.jsonrpc import AppError
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
    store = ctx.daemon.store
    if params.names is None:
        servers = store.list()
    else:
        servers = [store.require(name) for name in dict.fromkeys(params.names)]
    data, next_cursor = page(servers, params.cursor, params.limit)
    return ServerListResult(data=[record(s) for s in data], next_cursor=next_cursor)


@method("mcpServer/create", ServerCreateParams)
def create(ctx: RequestContext, params: ServerCreateParams) -> ServerResult:
    check_server(params.name, params.config)
    policy().check_transport(params.config, params.name)
    config = restore_redacted(params.config, None)
    server = ctx.daemon.store.create(params.name, config)
    ctx.daemon.server_created(server.name, server.config)
    return ServerResult(server=record(server))


@method("mcpServer/update", ServerUpdateParams)
async def update(ctx: RequestContext, params: ServerUpdateParams) -> ServerResult:
    if (params.config is None) == (params.patch is None):
        message = "exactly one of config and patch is required"
        raise AppError("invalidParams", message, errors=[{"path": "params", "message": message}])
    if params.config is not None:
        check_server(params.name, params.config)
    sent, patch = params.config, params.patch

    def change(stored: McpServerConfig) -> McpServerConfig:
        config = restore_redacted(sent, stored) if sent is not None else patched(params.name, stored, patch or {})
        if config.type != stored.type:
            policy().check_transport(config, params.name)
        return config

    server = ctx.daemon.store.edit(params.name, change, params.expected_revision)
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
