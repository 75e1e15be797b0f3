"""``thread/start|list|read|archive``, ``thread/context/read`` and ``mcpServer/tool/call`` (SPEC §4, §6, §7).

The tool call runs in its thread's runtime (never a guessed owner), which hands back the finished result; what
only this layer knows is the calling connection, so it gives the runtime a progress callback bound to it and that
connection's elicitation channel (the runtime asks, judges and reports its elicitations through it).
"""

from __future__ import annotations

import anyio

from app_server.context import RequestContext
from app_server.handlers.paging import page
from app_server.handlers.registry import method
from app_server.wire.connection import EncodedResult
from mcp_runtime import admin_policy
from protocol.jsonrpc import AppError
from protocol.task import BackgroundCall
from protocol.thread import (
    ContextReadParams,
    ContextReadResult,
    ServerInstructions,
    ThreadIdParams,
    ThreadListParams,
    ThreadListResult,
    ThreadReadParams,
    ThreadReadResult,
    ThreadResult,
    ThreadStartParams,
)
from protocol.tool import ToolCallParams, ToolProgress


@method("thread/start", ThreadStartParams)
async def thread_start(ctx: RequestContext, params: ThreadStartParams) -> ThreadResult:
    thread = await ctx.daemon.threads.start(_admit(ctx, params), ctx.connection)
    known: dict[str, ServerInstructions] = {}
    for name in thread.servers:  # answered at once: only what a management connection already holds
        try:
            row = ctx.daemon.manager.status(name)
        except AppError:
            continue
        if row.instructions:
            known[name] = ServerInstructions(
                instructions=row.instructions, instructions_truncated=row.instructions_truncated
            )
    return ThreadResult(thread=thread, instructions=known or None)


def _admit(ctx: RequestContext, params: ThreadStartParams) -> ThreadStartParams:
    """``policyDenied`` when the administrator's policy refuses a server the thread names; a stored server the
    policy denies is left out of a thread that takes all of them (it never starts)."""
    policy = admin_policy()
    for name, config in (params.mcp_servers or {}).items():
        policy.check(name, config)
    if params.strict_mcp_config:
        return params
    stored = [server for server in ctx.daemon.store.list() if server.config.enabled]
    if params.servers is not None:
        wanted = set(params.servers)
        for server in stored:
            if server.name in wanted:
                policy.check(server.name, server.config, server.source)
        return params
    admitted = [s.name for s in stored if policy.denial(s.config, s.source) is None]
    return params if len(admitted) == len(stored) else params.model_copy(update={"servers": admitted})


@method("thread/list", ThreadListParams)
async def thread_list(ctx: RequestContext, params: ThreadListParams) -> ThreadListResult:
    data, next_cursor = await ctx.daemon.threads.page(params.cursor, params.limit)
    return ThreadListResult(data=data, next_cursor=next_cursor)


@method("thread/read", ThreadReadParams)
def thread_read(ctx: RequestContext, params: ThreadReadParams) -> ThreadReadResult:
    thread, facts = ctx.daemon.threads.read(params.thread_id)
    ctx.daemon.threads.follow(thread.id, ctx.connection)
    data, next_cursor = page(facts.facts, params.cursor, params.limit)
    return ThreadReadResult(thread=thread, facts=data, next_cursor=next_cursor, facts_truncated=facts.truncated)


@method("thread/archive", ThreadIdParams)
async def thread_archive(ctx: RequestContext, params: ThreadIdParams) -> ThreadResult:
    return ThreadResult(thread=await ctx.daemon.threads.archive(params.thread_id))


@method("mcpServer/tool/call", ToolCallParams)
async def tool_call(ctx: RequestContext, params: ToolCallParams) -> EncodedResult | BackgroundCall:
    runtime = ctx.daemon.thread_runtime(params.thread_id)
    thread_id = runtime.thread_id
    ctx.daemon.threads.follow(thread_id, ctx.connection)
    connection = ctx.connection

    async def progress(value: float, total: float | None, message: str | None) -> None:
        connection.notify(
            "mcpServer/tool/progress",
            ToolProgress(
                thread_id=thread_id,
                turn_id=params.turn_id,
                request_id=ctx.request_id,
                server=params.server,
                tool=params.tool,
                progress=value,
                total=total,
                message=message,
            ),
        )

    channel = ctx.daemon.elicitation_channel(connection)
    if params.background:  # answered at once; the call runs in the thread and reports to this connection
        runtime.status(params.server)  # unknownServer now, not in the task
        task = runtime.tasks.start_call(
            runtime.call_tool,
            params.server,
            params.tool,
            params.arguments,
            ttl_ms=params.ttl_ms,
            turn_id=params.turn_id,
            timeout_ms=params.timeout_ms,
            meta=params.meta,
            channel=channel,
            origin=params.origin,
        )
        return BackgroundCall(task=task)
    answer = await runtime.call_tool(
        params.server,
        params.tool,
        params.arguments,
        turn_id=params.turn_id,
        timeout_ms=params.timeout_ms,
        meta=params.meta,
        progress=progress,
        channel=channel,
        origin=params.origin,
    )
    return EncodedResult(answer)


@method("thread/context/read", ContextReadParams)
async def context_read(ctx: RequestContext, params: ContextReadParams) -> ContextReadResult:
    """A byte range of an archived projection text or blob, from the archive the tool call wrote it to."""
    thread_id = ctx.daemon.threads.get(params.thread_id).record.id
    archive = ctx.daemon.threads.context_archive
    return await anyio.to_thread.run_sync(archive.page, thread_id, params.ref, params.offset, params.limit)
