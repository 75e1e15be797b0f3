"""``mcpServer/registry/search|get``, ``mcpServer/install`` and ``mcpServer/bundle/inspect`` (SPEC §15): thin over
``mcp_runtime``'s installs; an install ends as ``mcpServer/create`` does, with the row's ``source`` saying where it
came from."""

from __future__ import annotations

import functools

import anyio

from app_server.context import RequestContext
from app_server.handlers.registry import method
from app_server.handlers.servers import record
from mcp_runtime import (
    Origins,
    admin_policy,
    check_bundle_free,
    check_server,
    installed_entries,
    parse_server_config,
    remove_bundle,
    remove_other_versions,
)
from protocol.install import (
    BundleInspectParams,
    BundleInspectResult,
    BundleSource,
    InstallParams,
    RegistryGetParams,
    RegistryGetResult,
    RegistrySearchParams,
    RegistrySearchResult,
)
from protocol.jsonrpc import AppError
from protocol.server import ServerResult

SEARCH_PAGE = 30


@method("mcpServer/registry/search", RegistrySearchParams)
async def search(ctx: RequestContext, params: RegistrySearchParams) -> RegistrySearchResult:
    installed = installed_entries((s.name, s.source) for s in ctx.daemon.store.list())
    found = await ctx.daemon.installs.search(params.query, params.cursor, params.limit or SEARCH_PAGE, installed)
    return RegistrySearchResult.model_validate(found)


@method("mcpServer/registry/get", RegistryGetParams)
async def get(ctx: RequestContext, params: RegistryGetParams) -> RegistryGetResult:
    return RegistryGetResult.model_validate(await ctx.daemon.installs.get(params.name, params.version))


@method("mcpServer/bundle/inspect", BundleInspectParams)
async def inspect(ctx: RequestContext, params: BundleInspectParams) -> BundleInspectResult:
    return BundleInspectResult.model_validate(await ctx.daemon.installs.inspect(params.path))


@method("mcpServer/install", InstallParams)
async def install(ctx: RequestContext, params: InstallParams) -> ServerResult:
    store, installs, inputs = ctx.daemon.store, ctx.daemon.installs, params.inputs or {}
    existing = store.get(params.name)
    if isinstance(params.source, BundleSource):
        earlier = existing if existing is not None and existing.source.startswith("bundle:") else None
        planned = await installs.plan_bundle(
            params.source.bundle.path, inputs, earlier.config if earlier else None, earlier.source if earlier else None
        )
    else:
        chosen = params.source.registry
        planned = await installs.plan_registry(chosen.name, chosen.version, chosen.option, inputs)
    upgrade = (
        existing is not None
        and planned.bundle is not None
        and existing.source.startswith(f"bundle:{planned.bundle[0]}@")
    )
    body = planned.config | ({"enabled": params.enabled} if params.enabled is not None else {})
    config = parse_server_config(params.name, body)
    check_server(params.name, config)
    ctx.daemon.settings.policy.check_transport(config, params.name)
    admin_policy().check(params.name, config, planned.source)
    if existing is not None and not upgrade:
        raise AppError("serverExists", f"a server named {params.name!r} already exists", name=params.name)
    if planned.bundle is not None:
        check_bundle_free(((s.name, s.source) for s in store.list()), planned.bundle[0], params.name)
    await installs.place(planned)  # every check passed: only now is a bundle unpacked
    # off the loop: secret inputs are written to the secret store (a keychain may answer slowly) first
    try:
        if upgrade:
            server = await anyio.to_thread.run_sync(store.reinstall, params.name, config, planned.source)
        else:
            create = functools.partial(store.create, params.name, config, source=planned.source)
            server = await anyio.to_thread.run_sync(create)
    except BaseException:
        if planned.bundle is not None and not upgrade:
            remove_bundle(ctx.daemon.data_dir, planned.source)  # nothing names the files
        raise
    if upgrade:
        await ctx.daemon.config_changed(params.name)
    else:
        ctx.daemon.server_created(server.name, server.config)  # an enabled install starts, as a create does
    if planned.bundle is not None:
        remove_other_versions(ctx.daemon.data_dir, *planned.bundle)
    return ServerResult(server=record(server, Origins(installs.registry_url, ctx.daemon.data_dir)))
