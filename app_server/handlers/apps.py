"""``mcpServer/importFromApp`` and ``mcpServer/syncAllToLive``: other apps' MCP configs, both directions."""

from __future__ import annotations

from pathlib import Path

from app_server.daemon import RequestContext
from mcp_runtime import plan_import, sync_app
from protocol.config import APP_NAMES
from protocol.server import (
    ImportFromAppParams,
    ImportFromAppResult,
    SyncAllToLiveParams,
    SyncAllToLiveResult,
    SyncAppResult,
)

_TARGET_FIELD = {"claudeDesktop": "claude_desktop"}


def import_from_app(ctx: RequestContext, params: ImportFromAppParams) -> ImportFromAppResult:
    daemon = ctx.daemon
    existing = {server.name: server.config for server in daemon.store.list()}
    plan = plan_import(
        params.app,
        path=Path(params.path) if params.path else None,
        home=daemon.home,
        env=daemon.env,
        existing=existing,
    )
    if plan.to_create and not params.dry_run:
        daemon.store.create_many(plan.to_create, plan.source)
    return ImportFromAppResult(imported=list(plan.to_create), skipped=plan.skipped, warnings=plan.warnings)


def sync_all_to_live(ctx: RequestContext, params: SyncAllToLiveParams) -> SyncAllToLiveResult:
    daemon = ctx.daemon
    stored = daemon.store.list()
    results: list[SyncAppResult] = []
    for app in params.apps or APP_NAMES:
        field = _TARGET_FIELD.get(app, app)
        servers = {
            s.name: s.config for s in stored if s.config.enabled and s.config.apps and getattr(s.config.apps, field)
        }
        warnings: list[str] = []
        result = sync_app(
            app, path=None, home=daemon.home, env=daemon.env, servers=servers, data_dir=daemon.data_dir,
            dry_run=params.dry_run, warnings=warnings,
        )
        result.warnings = warnings or None
        results.append(result)
    return SyncAllToLiveResult(results=results)


ROUTES = {
    "mcpServer/importFromApp": import_from_app,
    "mcpServer/syncAllToLive": sync_all_to_live,
}
