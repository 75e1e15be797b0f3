"""``mcpServer/task/*``: a thread's background calls (SPEC §16), listed, read, waited for and cancelled."""

from __future__ import annotations

from app_server.context import RequestContext
from app_server.handlers.registry import method
from app_server.wire.connection import EncodedResult
from protocol.task import TaskListParams, TaskListResult, TaskParams, TaskResult


@method("mcpServer/task/list", TaskListParams)
def task_list(ctx: RequestContext, params: TaskListParams) -> TaskListResult:
    return TaskListResult(data=ctx.daemon.thread_runtime(params.thread_id).tasks.list())


@method("mcpServer/task/get", TaskParams)
def task_get(ctx: RequestContext, params: TaskParams) -> TaskResult:
    return TaskResult(task=ctx.daemon.thread_runtime(params.thread_id).tasks.get(params.task_id))


@method("mcpServer/task/result", TaskParams)
async def task_result(ctx: RequestContext, params: TaskParams) -> EncodedResult:
    """Waits for the task: its result as the call would have answered it (projection and archive included)."""
    tasks = ctx.daemon.thread_runtime(params.thread_id).tasks
    return EncodedResult(await tasks.result(params.task_id))


@method("mcpServer/task/cancel", TaskParams)
async def task_cancel(ctx: RequestContext, params: TaskParams) -> TaskResult:
    tasks = ctx.daemon.thread_runtime(params.thread_id).tasks
    return TaskResult(task=await tasks.cancel(params.task_id))
