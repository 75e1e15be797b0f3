"""Status, lifecycle and catalog reads: ``mcpServerStatus/list``, ``mcpServer/start|stop``, ``mcpTool/*``,
``mcpPrompt/*``, ``mcpResource/*`` and ``mcpServer/resource/read``."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from app_server.daemon import RequestContext
from app_server.handlers.owners import catalog, owner
from app_server.handlers.paging import page
from app_server.handlers.registry import method
from protocol.base import Empty
from protocol.jsonrpc import AppError
from protocol.prompt import PromptGetParams, PromptGetResult, PromptListParams, PromptListResult, PromptView
from protocol.resource import (
    ResourceContent,
    ResourceListParams,
    ResourceListResult,
    ResourceReadParams,
    ResourceReadResult,
    ResourceSubscribeParams,
    ResourceTemplateView,
    ResourceView,
)
from protocol.server import (
    ServerNameParams,
    ServerStartResult,
    ServerStatus,
    ServerStatusListParams,
    ServerStatusListResult,
)
from protocol.tool import (
    ToolListForContextParams,
    ToolListForContextResult,
    ToolListParams,
    ToolListResult,
    ToolSearchParams,
    ToolSearchResult,
    ToolView,
)

PREVIEW_TEXT_BYTES = 16 * 1024


def _tools_and_auth(status: ServerStatus) -> ServerStatus:
    return ServerStatus(
        name=status.name, runtime_status=status.runtime_status, tools=status.tools, auth_status=status.auth_status
    )


@method("mcpServerStatus/list", ServerStatusListParams)
def status_list(ctx: RequestContext, params: ServerStatusListParams) -> ServerStatusListResult:
    of = owner(ctx, params.thread_id)
    statuses = [of.status(params.server_name)] if params.server_name is not None else of.statuses()
    if params.detail == "toolsAndAuthOnly":
        statuses = [_tools_and_auth(s) for s in statuses]
    data, next_cursor = page(statuses, params.cursor, params.limit)
    return ServerStatusListResult(data=data, next_cursor=next_cursor)


@method("mcpServer/start", ServerNameParams)
async def start(ctx: RequestContext, params: ServerNameParams) -> ServerStartResult:
    ctx.daemon.store.require(params.name)
    return ServerStartResult(status=await ctx.daemon.manager.start(params.name))


@method("mcpServer/stop", ServerNameParams)
async def stop(ctx: RequestContext, params: ServerNameParams) -> Empty:
    ctx.daemon.store.require(params.name)
    await ctx.daemon.manager.stop(params.name)
    return Empty()


@method("mcpTool/list", ToolListParams)
def tool_list(ctx: RequestContext, params: ToolListParams) -> ToolListResult:
    manager = ctx.daemon.manager
    if params.server is not None:
        manager.status(params.server)
    data, next_cursor = page(catalog(manager).views(params.server), params.cursor, params.limit)
    return ToolListResult(data=data, next_cursor=next_cursor)


def _visible(
    ctx: RequestContext, thread_id: str | None, caller: str | None, include_deferred: bool
) -> tuple[list[ToolView], frozenset[str]]:
    of = owner(ctx, thread_id)
    allowed, disabled = of.tool_filters()
    return catalog(of).visible(
        caller=caller, include_deferred=include_deferred, allowed_tools=allowed, disabled_tools=disabled
    )


@method("mcpTool/listForContext", ToolListForContextParams)
def tool_list_for_context(ctx: RequestContext, params: ToolListForContextParams) -> ToolListForContextResult:
    views, _ = _visible(ctx, params.thread_id, params.caller, params.include_deferred)
    return ToolListForContextResult(data=views)


@method("mcpTool/search", ToolSearchParams)
def tool_search(ctx: RequestContext, params: ToolSearchParams) -> ToolSearchResult:
    _, visible = _visible(ctx, params.thread_id, params.caller, include_deferred=True)
    index = catalog(owner(ctx, params.thread_id)).index()
    found, missing = index.search(params.query, params.limit, visible=visible)
    return ToolSearchResult(data=found, missing=missing or None)


def _connected(ctx: RequestContext, thread_id: str | None, server: str | None) -> dict[str, Any]:
    of = owner(ctx, thread_id)
    if server is None:
        return of.connections()
    return {server: of.connection(server)}


@method("mcpPrompt/list", PromptListParams)
def prompt_list(ctx: RequestContext, params: PromptListParams) -> PromptListResult:
    prompts = [
        PromptView.model_validate({"arguments": [], **prompt, "server": name})
        for name, conn in sorted(_connected(ctx, params.thread_id, params.server).items())
        for prompt in conn.state.prompts
    ]
    data, next_cursor = page(prompts, params.cursor, None)
    return PromptListResult(data=data, next_cursor=next_cursor)


@method("mcpPrompt/get", PromptGetParams)
async def prompt_get(ctx: RequestContext, params: PromptGetParams) -> PromptGetResult:
    conn = owner(ctx, params.thread_id).connection(params.server)
    if not any(p.get("name") == params.name for p in conn.state.prompts):
        raise AppError("unknownPrompt", f"server {params.server} has no prompt {params.name}", server=params.server)
    return PromptGetResult.model_validate(await conn.get_prompt(params.name, params.arguments))


@method("mcpResource/list", ResourceListParams)
def resource_list(ctx: RequestContext, params: ResourceListParams) -> ResourceListResult:
    connections = sorted(_connected(ctx, params.thread_id, params.server).items())
    resources = [
        ResourceView.model_validate({**r, "server": name}) for name, conn in connections for r in conn.state.resources
    ]
    templates = [
        ResourceTemplateView.model_validate({**t, "server": name})
        for name, conn in connections
        for t in conn.state.resource_templates
    ]
    data, next_cursor = page(resources, params.cursor, None)
    return ResourceListResult(resources=data, resource_templates=templates, next_cursor=next_cursor)


def preview_content(content: dict[str, Any]) -> dict[str, Any]:
    """Text cut to 16 KiB (``truncated``); a blob replaced by its size and digest."""
    if "blob" in content:
        raw = base64.b64decode(content["blob"])
        summary = {k: v for k, v in content.items() if k != "blob"}
        return {**summary, "blobBytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
    text = content.get("text") or ""
    encoded = text.encode()
    if len(encoded) <= PREVIEW_TEXT_BYTES:
        return content
    return {**content, "text": encoded[:PREVIEW_TEXT_BYTES].decode(errors="ignore"), "truncated": True}


@method("mcpServer/resource/read", ResourceReadParams)
async def resource_read(ctx: RequestContext, params: ResourceReadParams) -> ResourceReadResult:
    if params.thread_id is not None:
        return await ctx.daemon.thread_runtime(params.thread_id, ctx.connection).read_resource(
            params.server, params.uri, preview=params.preview
        )
    result = await ctx.daemon.manager.connection(params.server).read_resource(params.uri)
    contents = result.get("contents", [])
    if params.preview:
        contents = [preview_content(c) for c in contents]
    return ResourceReadResult(contents=[ResourceContent.model_validate(c) for c in contents])


@method("mcpResource/subscribe", ResourceSubscribeParams)
async def subscribe(ctx: RequestContext, params: ResourceSubscribeParams) -> Empty:
    await owner(ctx, params.thread_id).connection(params.server).subscribe(params.uri)
    return Empty()


@method("mcpResource/unsubscribe", ResourceSubscribeParams)
async def unsubscribe(ctx: RequestContext, params: ResourceSubscribeParams) -> Empty:
    await owner(ctx, params.thread_id).connection(params.server).unsubscribe(params.uri)
    return Empty()
