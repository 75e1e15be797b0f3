"""One server of a thread's runtime: its slot and start, the calls waiting on it, and when it sleeps (SPEC §4).

A connection with no request, open subscription or pending elicitation for the server's ``idleTimeoutMs`` is
closed (a stdio server's process group is stopped); its slot is kept for its last catalog, which is served while
it sleeps, and the next request wakes it. Fifty conversations then cost what they use.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import structlog

from mcp_runtime.owners.elicitation import Call
from mcp_runtime.session.slot import SessionSlot
from mcp_runtime.tasks import TaskHandle
from protocol.config import McpServerConfig
from protocol.jsonrpc import AppError

log = structlog.get_logger("mcp_runtime.thread")


@dataclass(eq=False)
class ThreadServer:
    config: McpServerConfig
    slot: SessionSlot | None = None
    ready: anyio.Event = field(default_factory=anyio.Event)
    task: TaskHandle | None = None
    error: AppError | None = None
    calls: list[Call] = field(default_factory=list)
    busy: int = 0
    """Requests to the server in flight (a call waiting on an elicitation included)."""
    touched: anyio.Event = field(default_factory=anyio.Event)
    """Set by every use and every end of one: the sleeper starts its wait for quiet again."""
    sleeper: TaskHandle | None = None
    asleep: bool = False
    """Closed for quiet: ``slot`` is the closed slot, kept for its catalog."""
    kept: SessionSlot | None = None
    """The last session that was ready: its catalog stands for the server after that session is lost (a crash, a
    dead HTTP server), also when a reconnect fails, so the model keeps the tools whose next call reconnects."""

    @property
    def starting(self) -> bool:
        return self.task is not None and not self.ready.is_set()

    def catalog_slot(self) -> SessionSlot | None:
        """The slot whose catalog is served: the live one, the one asleep, else the last one that was ready."""
        slot = self.slot
        if slot is not None and (slot.connected or self.asleep):
            return slot
        return self.kept

    def quiet(self) -> bool:
        return not self.busy and (self.slot is None or not self.slot.subscriptions)

    @asynccontextmanager
    async def use(self) -> AsyncIterator[object]:
        """A request to the server: while one is in flight it is not quiet, and its end starts the wait for quiet
        again."""
        self.busy += 1
        self.touched.set()
        try:
            yield self
        finally:
            self.busy -= 1
            self.touched.set()

    async def sleep_when_quiet(self, name: str, thread_id: str, closed: Callable[[], bool]) -> None:
        """Wait for ``idleTimeoutMs`` without a use while the server is quiet (any use starts the wait again),
        then put it to sleep: close its connection, keep its slot for the catalog."""
        timeout = self.config.idle_timeout_ms / 1000
        while True:
            self.touched = anyio.Event()
            if not self.quiet():
                await self.touched.wait()
                continue
            with anyio.move_on_after(timeout) as wait:
                await self.touched.wait()
            if wait.cancelled_caught and self.quiet():
                break
        slot = self.slot
        if slot is None or not slot.connected or closed():
            return
        self.asleep = True
        self.sleeper = None
        await slot.close()
        log.info("server_idle", server=name, thread_id=thread_id, idle_ms=self.config.idle_timeout_ms)
