"""``mcpServer/list|create|update|delete|enabled/set``: the app's server store."""

from __future__ import annotations

import anyio

from app_server.context import RequestContext
from app_server.handlers.paging import page
from app_server.handlers.registry import method
from mcp_runtime import (
    Origins,
    StoredServer,
    admin_policy,
    check_removable,
    check_server,
    patched,
    redacted,
    remove_bundle,
    restore_redacted,
)
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


def record(server: StoredServer, origins: Origins | None = None) -> ServerRecord:
    """The list view of a stored server: secrets replaced by ``***``; where it was installed from, and the
    administrator's rule that keeps it from starting, if any."""
    denied = admin_policy().denial(server.config, server.source)
    origin = origins.of(server.source) if origins is not None else None
    return ServerRecord.model_validate(
        {
            **({"deniedBy": denied} if denied is not None else {}),
            **({"installedFrom": origin} if origin is not None else {}),
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
    origins = Origins(ctx.daemon.settings.policy.registry_url or "", ctx.daemon.data_dir)
    return ServerListResult(data=[record(s, origins) for s in data], next_cursor=next_cursor)


@method("mcpServer/create", ServerCreateParams)
async def create(ctx: RequestContext, params: ServerCreateParams) -> ServerResult:
    check_server(params.name, params.config)
    ctx.daemon.settings.policy.check_transport(params.config, params.name)
    ctx.daemon.settings.policy.check_sources(params.config, params.name)
    admin_policy().check(params.name, params.config)
    config = restore_redacted(params.config, None)
    # off the loop: the config's secrets are written to the secret store (a keychain may answer slowly) first
    server = await anyio.to_thread.run_sync(ctx.daemon.store.create, params.name, config)
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

    before: list[McpServerConfig] = []

    def change(stored: McpServerConfig) -> McpServerConfig:
        config = restore_redacted(sent, stored) if sent is not None else patched(params.name, stored, patch or {})
        if config.type != stored.type:
            ctx.daemon.settings.policy.check_transport(config, params.name)
        ctx.daemon.settings.policy.check_sources(config, params.name)
        admin_policy().check_edit(params.name, stored, config, source)
        before[:] = [stored]
        return config

    source = ctx.daemon.store.require(params.name).source
    server = await anyio.to_thread.run_sync(ctx.daemon.store.edit, params.name, change, params.expected_revision)
    old_url = getattr(before[0], "url", None) if before else None
    if old_url is not None and getattr(server.config, "url", None) != old_url:
        await ctx.daemon.login_moved(params.name, old_url)  # the old URL's tokens are never used again
    await ctx.daemon.config_changed(params.name)
    return ServerResult(server=record(server))


@method("mcpServer/delete", ServerNameParams)
async def delete(ctx: RequestContext, params: ServerNameParams) -> Empty:
    stored = ctx.daemon.store.require(params.name)
    # a locked keychain could not remove the server's items: refused before anything changes
    await anyio.to_thread.run_sync(check_removable, ctx.daemon.data_dir, params.name, stored.config)
    await ctx.daemon.forget_server(params.name)
    await anyio.to_thread.run_sync(ctx.daemon.store.delete, params.name)  # and the server's items
    remove_bundle(ctx.daemon.data_dir, stored.source)
    return Empty()


@method("mcpServer/enabled/set", ServerEnabledSetParams)
async def set_enabled(ctx: RequestContext, params: ServerEnabledSetParams) -> ServerResult:
    server = await anyio.to_thread.run_sync(ctx.daemon.store.set_enabled, params.name, params.enabled, params.app)
    if params.app is None:
        await ctx.daemon.config_changed(params.name)
    return ServerResult(server=record(server))
