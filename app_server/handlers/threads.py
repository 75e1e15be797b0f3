"""``thread/start|list|read|archive`` and ``mcpServer/tool/call`` (SPEC §4, §6, §7).

The tool call resolves its thread's runtime (never guessing the owner) and gives it two callbacks bound to the
calling connection: progress (``mcpServer/tool/progress`` to that connection only) and ``ask`` for a
server-originated elicitation (``mcpServer/elicitation/request`` to that connection only, answered by exactly
that server-request id on that connection, then ``serverRequest/resolved`` before anything goes upstream).
"""

from __future__ import annotations

from typing import Any

from app_server.connection import next_server_request_id
from app_server.daemon import RequestContext
from app_server.handlers.registry import method
from protocol.elicitation import ElicitationRequest, ServerRequestResolved
from protocol.jsonrpc import AppError
from protocol.thread import (
    ThreadIdParams,
    ThreadListParams,
    ThreadListResult,
    ThreadReadResult,
    ThreadResult,
    ThreadStartParams,
)
from protocol.tool import ToolCallParams, ToolCallResult, ToolProgress


@method("thread/start", ThreadStartParams)
def thread_start(ctx: RequestContext, params: ThreadStartParams) -> ThreadResult:
    return ThreadResult(thread=ctx.daemon.threads.start(params, ctx.connection))


@method("thread/list", ThreadListParams)
async def thread_list(ctx: RequestContext, params: ThreadListParams) -> ThreadListResult:
    data, next_cursor = await ctx.daemon.threads.page(params.cursor, params.limit)
    return ThreadListResult(data=data, next_cursor=next_cursor)


@method("thread/read", ThreadIdParams)
def thread_read(ctx: RequestContext, params: ThreadIdParams) -> ThreadReadResult:
    thread, facts = ctx.daemon.threads.read(params.thread_id, ctx.connection)
    return ThreadReadResult(thread=thread, facts=facts)


@method("thread/archive", ThreadIdParams)
async def thread_archive(ctx: RequestContext, params: ThreadIdParams) -> ThreadResult:
    return ThreadResult(thread=await ctx.daemon.threads.archive(params.thread_id))


@method("mcpServer/tool/call", ToolCallParams)
async def tool_call(ctx: RequestContext, params: ToolCallParams) -> ToolCallResult:
    runtime = ctx.daemon.thread_runtime(params.thread_id, ctx.connection)  # type: ignore[arg-type]
    thread_id = runtime.thread_id
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

    async def ask(request: ElicitationRequest) -> dict[str, Any] | None:
        """Ask the calling connection only; None when it closed, errored or answered nonsense (→ cancel)."""
        request_id = next_server_request_id()
        response: dict[str, Any] | None = None
        try:
            response = await connection.request("mcpServer/elicitation/request", request, request_id)
        except AppError:
            response = None
        finally:
            # Resolved (answered, connection closed, or cancelled by the call's timeout/cancellation): tell that
            # connection before the answer is passed upstream.
            resolved = ServerRequestResolved(thread_id=thread_id, request_id=request_id)
            connection.notify("serverRequest/resolved", resolved)
        result = response.get("result") if response is not None else None
        return result if isinstance(result, dict) else None

    result = await runtime.call_tool(
        params.server,
        params.tool,
        params.arguments,
        turn_id=params.turn_id,
        timeout_ms=params.timeout_ms,
        meta=params.meta,
        progress=progress,
        ask=ask,
    )
    return ToolCallResult.model_validate(result)
