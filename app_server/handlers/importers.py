"""``mcpServer/importFromApp`` and ``mcpServer/syncAllToLive``: other apps' MCP configs, both directions."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio

from app_server.context import RequestContext
from app_server.handlers.registry import method
from app_server.process.logs import get_logger
from mcp_runtime import plan_import, sync_app
from protocol.config import APP_NAMES
from protocol.server import (
    ImportFromAppParams,
    ImportFromAppResult,
    SyncAllToLiveParams,
    SyncAllToLiveResult,
    SyncAppResult,
)

log = get_logger("app_server.handlers.importers")


@method("mcpServer/importFromApp", ImportFromAppParams)
async def import_from_app(ctx: RequestContext, params: ImportFromAppParams) -> ImportFromAppResult:
    daemon = ctx.daemon
    existing = {server.name: server.config for server in daemon.store.list()}
    # Reading and parsing an app's config (up to 16 MiB) runs off the event loop.
    plan = await anyio.to_thread.run_sync(
        partial(
            plan_import,
            params.app,
            path=Path(params.path) if params.path else None,
            home=daemon.home,
            env=daemon.env,
            existing=existing,
            policy=daemon.settings.policy,
        )
    )
    if plan.to_create and not params.dry_run:
        await anyio.to_thread.run_sync(daemon.store.create_many, plan.to_create, plan.source)
    log.info(
        "import_summary",
        app=params.app,
        imported=len(plan.to_create),
        skipped=len(plan.skipped),
        warnings=len(plan.warnings),
        dry_run=params.dry_run,
    )
    return ImportFromAppResult(imported=list(plan.to_create), skipped=plan.skipped, warnings=plan.warnings)


@method("mcpServer/syncAllToLive", SyncAllToLiveParams)
async def sync_all_to_live(ctx: RequestContext, params: SyncAllToLiveParams) -> SyncAllToLiveResult:
    daemon = ctx.daemon
    stored = daemon.store.list()
    results: list[SyncAppResult] = []
    for app in params.apps or APP_NAMES:
        servers = {s.name: s.config for s in stored if s.config.apps and s.config.apps.targets(app)}
        warnings: list[str] = []
        result = await anyio.to_thread.run_sync(
            partial(
                sync_app,
                app,
                path=None,
                home=daemon.home,
                env=daemon.env,
                servers=servers,
                data_dir=daemon.data_dir,
                dry_run=params.dry_run,
                warnings=warnings,
            )
        )
        result.warnings = warnings or None
        results.append(result)
        log.info(
            "sync_summary",
            app=app,
            servers=len(result.servers),
            changed=result.changed,
            failed=result.error.reason if result.error is not None else None,
            dry_run=params.dry_run,
        )
    return SyncAllToLiveResult(results=results)
