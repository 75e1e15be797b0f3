"""Status, lifecycle and catalog reads: ``mcpServerStatus/list``, ``mcpServer/start|stop``, ``mcpTool/*``,
``mcpPrompt/*``, ``mcpResource/*`` and ``mcpServer/resource/read``."""

from __future__ import annotations

from app_server.context import RequestContext
from app_server.handlers.owners import owner
from app_server.handlers.paging import page
from app_server.handlers.registry import method
from app_server.wire.connection import EncodedResult
from mcp_runtime import admin_policy
from protocol.base import Empty
from protocol.completion import CompletionParams, CompletionResult
from protocol.prompt import PromptGetParams, PromptGetResult, PromptListParams, PromptListResult
from protocol.resource import (
    ResourceListParams,
    ResourceListResult,
    ResourceReadParams,
    ResourceReadResult,
    ResourceSubscribeParams,
)
from protocol.server import ServerNameParams
from protocol.status import ServerStartResult, ServerStatusListParams, ServerStatusListResult
from protocol.tool import (
    ToolListForContextParams,
    ToolListForContextResult,
    ToolListParams,
    ToolListResult,
    ToolSearchParams,
    ToolSearchResult,
)


@method("mcpServerStatus/list", ServerStatusListParams)
async def status_list(ctx: RequestContext, params: ServerStatusListParams) -> ServerStatusListResult | EncodedResult:
    """Answered from the owner's kept rows and answers (the ``ServerStatusListResult`` JSON, at either detail)."""
    of = owner(ctx, params.thread_id)
    data, next_cursor = page(await of.server_statuses(params.server_name), params.cursor, params.limit)
    return EncodedResult(of.status_list_json(data, params.detail, next_cursor))


@method("mcpServer/start", ServerNameParams)
async def start(ctx: RequestContext, params: ServerNameParams) -> ServerStartResult | EncodedResult:
    """Answered with the row status lists reuse (the ``ServerStartResult`` JSON)."""
    stored = ctx.daemon.store.require(params.name)
    admin_policy().check(params.name, stored.config, stored.source)
    manager = ctx.daemon.manager
    return EncodedResult(manager.start_json(await manager.start(params.name)))


@method("mcpServer/stop", ServerNameParams)
async def stop(ctx: RequestContext, params: ServerNameParams) -> Empty:
    ctx.daemon.store.require(params.name)
    await ctx.daemon.manager.stop(params.name)
    return Empty()


@method("mcpTool/list", ToolListParams)
async def tool_list(ctx: RequestContext, params: ToolListParams) -> ToolListResult:
    data, next_cursor = page(await ctx.daemon.manager.tools(params.server), params.cursor, params.limit)
    return ToolListResult(data=data, next_cursor=next_cursor)


@method("mcpTool/listForContext", ToolListForContextParams)
async def tool_list_for_context(ctx: RequestContext, params: ToolListForContextParams) -> ToolListForContextResult:
    of = owner(ctx, params.thread_id)
    views, _ = await of.tools_for_context(caller=params.caller, include_deferred=params.include_deferred)
    return ToolListForContextResult(data=views)


@method("mcpTool/search", ToolSearchParams)
async def tool_search(ctx: RequestContext, params: ToolSearchParams) -> ToolSearchResult | EncodedResult:
    answer = await owner(ctx, params.thread_id).search_tools(params.query, params.limit, caller=params.caller)
    return EncodedResult(answer.encoded())


@method("mcpPrompt/list", PromptListParams)
async def prompt_list(ctx: RequestContext, params: PromptListParams) -> PromptListResult:
    prompts = await owner(ctx, params.thread_id).prompts(params.server)
    data, next_cursor = page(prompts, params.cursor, None)
    return PromptListResult(data=data, next_cursor=next_cursor)


@method("mcpPrompt/get", PromptGetParams)
async def prompt_get(ctx: RequestContext, params: PromptGetParams) -> PromptGetResult:
    return await owner(ctx, params.thread_id).get_prompt(params.server, params.name, params.arguments)


@method("mcpResource/list", ResourceListParams)
async def resource_list(ctx: RequestContext, params: ResourceListParams) -> ResourceListResult:
    resources, templates = await owner(ctx, params.thread_id).resources(params.server)
    data, next_cursor = page(resources, params.cursor, None)
    return ResourceListResult(resources=data, resource_templates=templates, next_cursor=next_cursor)


@method("mcpServer/completion/complete", CompletionParams)
async def completion(ctx: RequestContext, params: CompletionParams) -> CompletionResult:
    return await owner(ctx, params.thread_id).complete(params)


@method("mcpServer/resource/read", ResourceReadParams)
async def resource_read(ctx: RequestContext, params: ResourceReadParams) -> ResourceReadResult:
    return await owner(ctx, params.thread_id).read_resource(params.server, params.uri, preview=params.preview)


@method("mcpResource/subscribe", ResourceSubscribeParams)
async def subscribe(ctx: RequestContext, params: ResourceSubscribeParams) -> Empty:
    await owner(ctx, params.thread_id).subscribe(params.server, params.uri)
    return Empty()


@method("mcpResource/unsubscribe", ResourceSubscribeParams)
async def unsubscribe(ctx: RequestContext, params: ResourceSubscribeParams) -> Empty:
    await owner(ctx, params.thread_id).unsubscribe(params.server, params.uri)
    return Empty()
