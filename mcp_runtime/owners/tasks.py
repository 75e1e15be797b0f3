"""A thread's background calls (SPEC §16): tool calls left running, read later, kept for their TTL.

A background call is an ordinary thread call (the same checks, projection, archive and elicitation routing) run in
the daemon's task group instead of the request's, so the request answers at once with the task. A finished task's
result is written to the thread's archive, not held in memory; the task and its result are forgotten once their TTL
passes or the thread is archived. At most ``MAX_RUNNING`` run at once per thread.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio

from mcp_runtime.owners.elicitation import Asker, Ending, Resolution
from mcp_runtime.owners.url_elicitation import Notify
from mcp_runtime.storage.archive import ThreadArchive, stored
from mcp_runtime.tasks import Spawner, TaskHandle
from protocol.elicitation import ElicitationRequest
from protocol.errors import ErrorDetails
from protocol.jsonrpc import AppError
from protocol.task import TaskInfo, TaskStatus, TaskUpdated

MAX_RUNNING = 64
MAX_FINISHED = 256
"""Finished tasks kept per thread within their TTL; past it the oldest finished go first (memory stays bounded)."""
DEFAULT_TTL_MS = 3_600_000
MAX_TTL_MS = 86_400_000

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
Run = Callable[["BackgroundTask"], Awaitable[bytes]]
"""Runs the call for a task (its progress and forms reported through the task); returns the result JSON."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(eq=False)
class BackgroundTask:
    """One background call: its public state, its outcome once finished, and who hears of it."""

    thread_id: str
    task_id: str
    server: str
    tool: str
    ttl_ms: int
    notify: Notify | None
    status: TaskStatus = "working"
    status_message: str | None = None
    created_at: str = field(default_factory=_now)
    last_updated_at: str | None = None
    result_ref: str | None = None
    """Where the finished call's result JSON is in the thread's archive."""
    error: AppError | None = None
    finished_at: float | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    handle: TaskHandle | None = None
    expiry: TaskHandle | None = None
    open_forms: int = 0

    def info(self) -> TaskInfo:
        return TaskInfo(
            task_id=self.task_id,
            status=self.status,
            created_at=self.created_at,
            last_updated_at=self.last_updated_at,
            status_message=self.status_message,
            server=self.server,
            tool=self.tool,
            ttl_ms=self.ttl_ms,
        )

    def update(self, status: TaskStatus | None = None, message: str | None = None) -> None:
        """A new status or status message: told to the connection that started the task."""
        if status is not None:
            self.status = status
        if message is not None:
            self.status_message = message
        self.last_updated_at = _now()
        if self.notify is not None:
            error = None
            if self.error is not None:
                error = ErrorDetails.model_validate({"reason": self.error.reason, **self.error.details})
            self.notify("mcpServer/task/updated", TaskUpdated(thread_id=self.thread_id, task=self.info(), error=error))

    async def progress(self, value: float, total: float | None, message: str | None) -> None:
        if message is not None:
            self.update(message=message)

    def form_opened(self) -> None:
        self.open_forms += 1
        if self.open_forms == 1 and self.status == "working":
            self.update("input_required")

    def form_closed(self) -> None:
        self.open_forms -= 1
        if self.open_forms == 0 and self.status == "input_required":
            self.update("working")


class BackgroundTasks:
    """The background calls of one thread."""

    def __init__(self, thread_id: str, spawner: Spawner, archive: ThreadArchive) -> None:
        self._thread_id = thread_id
        self._spawner = spawner
        self._archive = archive
        self._tasks: dict[str, BackgroundTask] = {}
        self._numbers = itertools.count(1)

    def start(self, server: str, tool: str, run: Run, *, notify: Notify | None, ttl_ms: int | None) -> TaskInfo:
        """Start ``run`` as a task of this thread; ``tooManyTasks`` past ``MAX_RUNNING`` running ones."""
        self._expire()
        running = sum(1 for task in self._tasks.values() if not task.done.is_set())
        if running >= MAX_RUNNING:
            raise AppError("tooManyTasks", f"{running} background calls already run in this thread", limit=MAX_RUNNING)
        task_id = f"task-{next(self._numbers)}-{secrets.token_hex(4)}"
        ttl = min(ttl_ms if ttl_ms is not None else DEFAULT_TTL_MS, MAX_TTL_MS)
        task = BackgroundTask(self._thread_id, task_id, server, tool, ttl, notify)
        self._tasks[task_id] = task
        task.handle = self._spawner.spawn(self._run, task, run, name=f"background:{task_id}")
        return task.info()

    def start_call(
        self,
        call_tool: Callable[..., Awaitable[bytes]],
        server: str,
        tool: str,
        arguments: dict[str, Any] | None,
        *,
        channel: Asker,
        ttl_ms: int | None = None,
        **call: Any,
    ) -> TaskInfo:
        """Start a thread's ``call_tool`` as a task: its progress becomes the task's status message, a form open in
        front of the user makes it ``input_required``, and a tool the server may run as a task runs as one."""

        async def run(task: BackgroundTask) -> bytes:
            asking = _TaskForms(channel, task)
            return await call_tool(
                server, tool, arguments, progress=task.progress, channel=asking, background=True, **call
            )

        return self.start(server, tool, run, notify=channel.notify, ttl_ms=ttl_ms)

    async def _run(self, task: BackgroundTask, run: Run) -> None:
        status: TaskStatus = "failed"
        try:
            task.result_ref = await self._keep(await run(task))
            status = "completed"
        except AppError as exc:
            task.error = exc
        except anyio.get_cancelled_exc_class():
            status = "cancelled"
            task.error = AppError("cancelled", "the background call was cancelled")
            raise
        except Exception:
            task.error = AppError("internal", "the background call failed")
            raise
        finally:
            task.finished_at = anyio.current_time()
            task.update(status)
            task.done.set()
            if self._tasks.get(task.task_id) is task:
                task.expiry = self._spawner.spawn(self._forget_after, task, name=f"background-ttl:{task.task_id}")

    async def _keep(self, answer: bytes) -> str:
        """Write a result to the thread's archive (a worker thread's file I/O); its ref."""
        entry = stored(self._archive.new_ref(), "text", "application/json", answer)
        if not await anyio.to_thread.run_sync(self._archive.put_unless_full, self._thread_id, [(entry, answer)]):
            message = "the result could not be kept: the data dir's disk is full"
            raise AppError("storageFull", message, path=str(self._archive.directory))
        return entry.ref

    async def _forget_after(self, task: BackgroundTask) -> None:
        """The task's TTL from its end: then it and its archived result are forgotten."""
        await anyio.sleep(task.ttl_ms / 1000)
        task.expiry = None
        await self._forget([task])

    async def _forget(self, tasks: list[BackgroundTask]) -> None:
        for task in tasks:
            if self._tasks.get(task.task_id) is task:
                del self._tasks[task.task_id]
        refs = [task.result_ref for task in tasks if task.result_ref is not None]
        if refs:
            await anyio.to_thread.run_sync(self._archive.drop, self._thread_id, refs)

    def _expire(self) -> None:
        """Forget the oldest finished tasks past ``MAX_FINISHED`` (their TTL timers forget the others)."""
        finished = sorted((t.finished_at, t.task_id) for t in self._tasks.values() if t.finished_at is not None)
        dropped = [self._tasks[task_id] for _, task_id in finished[: max(0, len(finished) - MAX_FINISHED)]]
        for task in dropped:
            del self._tasks[task.task_id]
            if task.expiry is not None:
                task.expiry.cancel()
        if dropped:
            self._spawner.spawn(self._forget, dropped, name=f"background-forget:{self._thread_id}")

    def _get(self, task_id: str) -> BackgroundTask:
        self._expire()
        task = self._tasks.get(task_id)
        if task is None:
            raise AppError("unknownTask", f"this thread has no task {task_id[:64]}", taskId=task_id[:64])
        return task

    def list(self) -> list[TaskInfo]:
        self._expire()
        return [task.info() for task in self._tasks.values()]

    def get(self, task_id: str) -> TaskInfo:
        return self._get(task_id).info()

    async def result(self, task_id: str) -> bytes:
        """Wait for the task to finish: its result JSON, or the call's error."""
        task = self._get(task_id)
        await task.done.wait()
        ref = task.result_ref
        if ref is None:
            raise task.error or AppError("internal", "the background call left no result")
        try:
            chunk = await anyio.to_thread.run_sync(self._archive.read, self._thread_id, ref, 0, self._archive.cap_bytes)
        except AppError as exc:
            if exc.reason != "unknownRef":
                raise
            message = f"the result of task {task_id[:64]} was dropped from the thread's archive (its size cap)"
            raise AppError("unknownTask", message, taskId=task_id[:64]) from None
        return chunk.data

    async def cancel(self, task_id: str) -> TaskInfo:
        """Cancel a running task (upstream too) and wait for it to end; a finished one is left as it is."""
        task = self._get(task_id)
        if task.handle is not None and not task.done.is_set():
            await task.handle.cancel_and_wait()
        return task.info()

    async def aclose(self) -> None:
        """The thread is archived: every running task is cancelled and every task forgotten, results included."""
        tasks = list(self._tasks.values())
        for task in tasks:
            if task.handle is not None and not task.done.is_set():
                await task.handle.cancel_and_wait()
            if task.expiry is not None:
                await task.expiry.cancel_and_wait()
        with anyio.CancelScope(shield=True):
            await self._forget(list(self._tasks.values()))
        self._tasks.clear()


class _TaskForms:
    """A background task's elicitations: asked through the starting connection's channel, the task
    ``input_required`` while a form is open."""

    def __init__(self, channel: Asker, task: BackgroundTask) -> None:
        self._channel = channel
        self._task = task

    async def ask(self, request: ElicitationRequest, ending: Ending) -> Resolution:
        self._task.form_opened()
        try:
            return await self._channel.ask(request, ending)
        finally:
            self._task.form_closed()

    def notify(self, method: str, params: Any) -> int:
        return self._channel.notify(method, params)
