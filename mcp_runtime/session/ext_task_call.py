"""A ``tools/call`` the server answered with a task handle under the 2026-07-28 ``io.modelcontextprotocol/tasks``
extension (SEP-2663, SPEC §16): polled with ``tasks/get``, given input with ``tasks/update``, stopped with
``tasks/cancel``.

In this era the server decides per call whether to make a task (the connection declares the extension); there is
no blocking ``tasks/result``: the final result, or the error, comes in the ``tasks/get`` answer that says the task
ended. A task waiting on input lists its requests (``inputRequests``, the shape of a 2026 input-required result),
so they are answered through the SDK's own input-required driver, the same callbacks a plain call's rounds use,
and the answers go back with ``tasks/update``. A call cut short sends ``tasks/cancel``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

import anyio

from mcp_runtime import _sdk_compat
from mcp_runtime.session.task_call import UpstreamTask, following
from protocol.jsonrpc import AppError

if TYPE_CHECKING:
    from mcp import Client

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
TaskStarted = Callable[[str], None]


def is_task_handle(raw: dict[str, Any]) -> bool:
    """A 2026 ``CreateTaskResult``: the call was made a task (its result comes later)."""
    return raw.get("resultType") == "task" and isinstance(raw.get("taskId"), str)


async def follow_task(
    client: Client,
    first: dict[str, Any],
    *,
    server: str,
    timeout_s: float,
    progress: Progress | None,
    started: TaskStarted | None = None,
) -> dict[str, Any]:
    """Follow a task handle to the call's result (the raw ``CallToolResult`` dict)."""
    task = UpstreamTask(task_id=first["taskId"], status=str(first.get("status", "working")), modern=True)
    if started is not None:
        started(task.task_id)
    followed = _follow(client, task, first, server=server, timeout_s=timeout_s, progress=progress)
    return await following(client, task, followed)


async def resume_task(
    client: Client, task: UpstreamTask, *, server: str, timeout_s: float, progress: Progress | None
) -> dict[str, Any]:
    """Follow a task again from a new connection (the last one broke), from its current state."""
    latest = await _request(client, "tasks/get", task.task_id, timeout_s)
    followed = _follow(client, task, latest, server=server, timeout_s=timeout_s, progress=progress)
    return await following(client, task, followed)


async def _follow(
    client: Client,
    task: UpstreamTask,
    latest: dict[str, Any],
    *,
    server: str,
    timeout_s: float,
    progress: Progress | None,
) -> dict[str, Any]:
    answered = task.answered

    async def seen(raw: dict[str, Any]) -> None:
        if task.update(raw) and progress is not None:
            await progress(float(len(task.messages)), None, task.message)

    async def poll_past_input(responses: Any, _state: str | None) -> Any:
        """The driver's retry: the answers sent with ``tasks/update``, then polling until the task asks for more
        (handed back to the driver) or goes on."""
        from pydantic import TypeAdapter

        if responses:
            raw_responses = _dump(TypeAdapter(dict[str, Any]), responses)
            await _request(client, "tasks/update", task.task_id, timeout_s, inputResponses=raw_responses)
            answered.update(responses)  # only once delivered: a request whose answer was lost is asked again
        while True:
            raw = await _request(client, "tasks/get", task.task_id, timeout_s)
            await seen(raw)
            if (asked := _new_requests(raw, answered)) is not None:
                return asked
            if task.status != "input_required":
                return raw
            await anyio.sleep(task.poll_s)

    await seen(latest)
    while True:
        if task.status == "completed" and not is_task_handle(latest):  # a handle never carries the result
            result = latest.get("result")
            if not isinstance(result, dict):
                raise AppError("invalidOutput", "the task completed without a result", server=server)
            return result
        if task.status == "failed":
            reported = latest.get("error")
            error: dict[str, Any] = reported if isinstance(reported, dict) else {}
            message = str(error.get("message", "the task failed"))[:1000]
            raise AppError("upstreamError", message, server=server, mcpCode=error.get("code"), mcpMessage=message)
        if task.status == "cancelled":
            raise AppError("cancelled", f"{server} cancelled the task", server=server)
        if (asked := _new_requests(latest, answered)) is not None:
            latest = await _sdk_compat.drive_input_required(client, asked, poll_past_input)
            continue
        await anyio.sleep(task.poll_s)
        latest = await _request(client, "tasks/get", task.task_id, timeout_s)
        await seen(latest)


def _new_requests(raw: dict[str, Any], answered: set[str]) -> Any | None:
    """The task's requests for input not answered yet, as the input-required result the SDK's driver takes."""
    import mcp_types as types

    requests = raw.get("inputRequests")
    if raw.get("status") != "input_required" or not isinstance(requests, dict):
        return None
    fresh = {key: value for key, value in requests.items() if key not in answered}
    if not fresh:
        return None
    return types.InputRequiredResult.model_validate(
        {"resultType": "input_required", "inputRequests": fresh}, by_name=False
    )


def _dump(adapter: Any, responses: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = adapter.dump_python(responses, by_alias=True, mode="json", exclude_none=True)
    return dumped


async def _request(
    client: Client, method: Literal["tasks/get", "tasks/update"], task_id: str, timeout_s: float, **params: Any
) -> dict[str, Any]:
    """One of the extension's requests through the session (stamped like any other request of the connection)."""
    request = _request_model().model_validate({"method": method, "params": {"taskId": task_id, **params}})
    answer: dict[str, Any] = await client.session.send_request(request, _sdk_compat.checked_result_adapter(), timeout_s)
    return answer


@functools.cache
def _request_model() -> Any:
    """The model of the extension's requests (its methods are not the core protocol's), built on first use."""
    import mcp_types as types

    class ExtensionParams(types.RequestParams):
        model_config = {"extra": "allow"}

    class ExtensionRequest(types.Request[ExtensionParams, str]):
        method: str
        params: ExtensionParams

    return ExtensionRequest
