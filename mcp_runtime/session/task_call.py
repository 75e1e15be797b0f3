"""A ``tools/call`` run as an MCP task (2025-11-25 ``tasks/*``, SPEC §16): create, poll, relay, fetch, cancel.

The SDK has the task models but no client loop, so it is written once here. The server's status messages reach
the caller as progress; ``tasks/result`` is asked for as soon as the task waits on input (the server delivers its
elicitation on that request's stream) or ends. A call cut short sends ``tasks/cancel`` so the server stops too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from mcp_runtime import _sdk_compat

if TYPE_CHECKING:
    from mcp import Client

log = structlog.get_logger("mcp_runtime.task_call")

POLL_MIN_S = 0.1
POLL_MAX_S = 5.0
"""A server's ``pollInterval`` is honoured within these bounds (a 0 would spin, an hour would look hung)."""
POLL_DEFAULT_S = 1.0
TASK_TTL_MS = 3_600_000
"""How long the daemon asks the server to keep a task it created."""
CANCEL_GRACE_S = 2.0
PAYLOAD_WAIT_S = TASK_TTL_MS / 1000
"""``tasks/result`` waits as long as the task runs (a form may be open); the call's own deadline bounds it."""
WAITING = ("input_required",)
TERMINAL = ("completed", "failed", "cancelled")

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
TaskStarted = Callable[[str], None]


@dataclass
class UpstreamTask:
    """What the daemon last heard of one server-side task."""

    task_id: str
    status: str
    message: str | None = None
    poll_s: float = POLL_DEFAULT_S
    messages: list[str] = field(default_factory=list)
    answered: set[str] = field(default_factory=set)
    """The keys of the requests for input already answered (2026 extension)."""
    modern: bool = False
    """Followed under the 2026 tasks extension (else 2025-11-25 ``tasks/*``)."""

    def update(self, raw: dict[str, Any]) -> bool:
        """Take a ``Task`` as the server sent it; True when its status message is new."""
        self.status = str(raw.get("status", self.status))
        interval = raw.get("pollInterval", raw.get("pollIntervalMs"))  # the 2025 name, then the 2026 one
        if isinstance(interval, int | float) and not isinstance(interval, bool):
            self.poll_s = min(POLL_MAX_S, max(POLL_MIN_S, interval / 1000))
        message = raw.get("statusMessage")
        if isinstance(message, str) and message != self.message:
            self.message = message
            self.messages.append(message)
            return True
        return False


class TaskConnectionLost(Exception):
    """The connection broke while a task was followed. The task runs on in the server: it is followed again from
    a new connection (SPEC §16: a dropped HTTP stream does not lose a task), never cancelled for the loss."""

    def __init__(self, task: UpstreamTask) -> None:
        super().__init__(f"the connection was lost while task {task.task_id} ran")
        self.task = task


def connection_broke(exc: BaseException) -> bool:
    """A failure of the connection itself (closed, reset, cut), not an answer of the server."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED
    return isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream)


async def following(client: Client, task: UpstreamTask, follow: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """Await a task's ``follow``: a broken connection leaves the task running (``TaskConnectionLost``); any other
    end short of the task's own (a failure, the call cancelled) sends ``tasks/cancel`` so the server stops too."""
    try:
        return await follow
    except Exception as exc:
        if task.status not in TERMINAL and connection_broke(exc):
            raise TaskConnectionLost(task) from exc
        await _cancel_unfinished(client, task)
        raise
    except BaseException:
        await _cancel_unfinished(client, task)
        raise


async def _cancel_unfinished(client: Client, task: UpstreamTask) -> None:
    if task.status not in TERMINAL:
        with anyio.move_on_after(CANCEL_GRACE_S, shield=True):
            await cancel_task(client, task.task_id)


def is_task_result(raw: dict[str, Any]) -> bool:
    """A ``CreateTaskResult`` (the server took the call as a task) rather than the call's own result."""
    task = raw.get("task")
    return isinstance(task, dict) and isinstance(task.get("taskId"), str) and "content" not in raw


async def call_as_task(
    client: Client,
    request: Any,
    *,
    timeout_s: float,
    progress: Progress | None,
    started: TaskStarted | None = None,
) -> dict[str, Any]:
    """Send ``request`` (a ``tools/call`` carrying ``task``) and follow the task to its result (the raw
    ``CallToolResult`` dict). A server that answers at once with a plain result is answered with that."""
    session = client.session
    raw = await _sdk_compat.send_unchecked(session, request, timeout_s=timeout_s)
    if not is_task_result(raw):
        return raw
    task = UpstreamTask(task_id=raw["task"]["taskId"], status="working")
    if started is not None:
        started(task.task_id)
    return await following(client, task, _follow(client, task, raw["task"], timeout_s=timeout_s, progress=progress))


async def resume_task(
    client: Client, task: UpstreamTask, *, timeout_s: float, progress: Progress | None
) -> dict[str, Any]:
    """Follow a 2025-era task again from a new connection (the last one broke): poll, then fetch its result."""
    latest = await _get(client, task.task_id, timeout_s)
    return await following(client, task, _follow(client, task, latest, timeout_s=timeout_s, progress=progress))


async def cancel_task(client: Client, task_id: str) -> None:
    """``tasks/cancel``, best effort: the server may have finished or forgotten the task."""
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
    try:
        await client.session.send_request(request, _sdk_compat.checked_result_adapter(), CANCEL_GRACE_S)
    except (MCPError, anyio.ClosedResourceError, anyio.BrokenResourceError):
        log.debug("task_cancel_refused", task_id=task_id)


async def _get(client: Client, task_id: str, timeout_s: float) -> dict[str, Any]:
    import mcp_types as types

    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    answer: dict[str, Any] = await client.session.send_request(request, _sdk_compat.checked_result_adapter(), timeout_s)
    return answer


async def _payload(client: Client, task_id: str, timeout_s: float) -> dict[str, Any]:
    """``tasks/result``: blocks until the task ends; the server's requests for input arrive while it waits."""
    import mcp_types as types

    request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
    answer: dict[str, Any] = await client.session.send_request(request, _sdk_compat.checked_result_adapter(), timeout_s)
    return answer


async def _follow(
    client: Client, task: UpstreamTask, first: dict[str, Any], *, timeout_s: float, progress: Progress | None
) -> dict[str, Any]:
    """Poll ``tasks/get`` (relaying each new status message) until the task waits on input or ends; then fetch
    ``tasks/result`` while polling goes on, so status messages keep coming during a form. A failure of either
    request is raised as it is (not wrapped in an exception group), for the caller to type."""
    result: dict[str, Any] = {}
    failure: list[Exception] = []
    fetched = anyio.Event()

    async def fetch() -> None:
        try:
            result.update(await _payload(client, task.task_id, max(timeout_s, PAYLOAD_WAIT_S)))
        except Exception as exc:
            failure.append(exc)
        fetched.set()

    async with anyio.create_task_group() as tg:
        latest = first
        fetching = False
        while not failure:
            if task.update(latest) and progress is not None:
                await progress(float(len(task.messages)), None, task.message)
            if not fetching and task.status in WAITING + TERMINAL:
                fetching = True
                tg.start_soon(fetch)
            if task.status in TERMINAL:
                break
            with anyio.move_on_after(task.poll_s):
                await fetched.wait()
            if fetched.is_set():
                break
            try:
                latest = await _get(client, task.task_id, timeout_s)
            except Exception as exc:
                failure.append(exc)
        if fetching and not failure:
            await fetched.wait()
        tg.cancel_scope.cancel()
    if failure:
        raise failure[0]
    task.status = "completed"
    return result
