"""Owner tasks run inside the daemon's task group, each under a cancel scope of its own.

An owner (the management manager, a thread runtime) starts background work (a server's connect, a restart with
backoff) that outlives the request that caused it. The work belongs to the daemon's task group, so shutdown
cancels it; its own scope lets the owner cancel one task and wait for it to finish, without polling.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import TaskGroup


class TaskHandle:
    """One spawned task: cancel it, wait for it, ask whether it is done."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.scope = anyio.CancelScope()
        self._done = anyio.Event()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def cancel(self) -> None:
        self.scope.cancel()

    async def wait(self) -> None:
        await self._done.wait()

    async def cancel_and_wait(self) -> None:
        """Cancel and wait, shielded: a caller being cancelled still reaps what it started."""
        self.cancel()
        with anyio.CancelScope(shield=True):
            await self._done.wait()

    async def _run(self, func: Callable[..., Awaitable[Any]], args: tuple[Any, ...]) -> None:
        try:
            with self.scope:
                await func(*args)
        except Exception:  # one task's bug must not end the daemon's task group
            import structlog  # not on the start-up path: the daemon spawns its first task before it loads

            structlog.get_logger("mcp_runtime.tasks").error("background_task_failed", task=self.name, exc_info=True)
        finally:
            self._done.set()


class Spawner:
    """Starts owner tasks in a task group the caller keeps open (the daemon's, or a test's)."""

    def __init__(self, tasks: TaskGroup) -> None:
        self._tasks = tasks

    def spawn(self, func: Callable[..., Awaitable[Any]], *args: Any, name: str) -> TaskHandle:
        handle = TaskHandle(name)
        self._tasks.start_soon(handle._run, func, args, name=name)
        return handle
