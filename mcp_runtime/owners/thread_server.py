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
WAKE_RETRY_S = 0.5
"""The pause after a first failed wake; it doubles with each failure in a row, up to ``WAKE_RETRY_MAX_S``."""
WAKE_RETRY_MAX_S = 30.0


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
    """Set by every use and every end of one: the sleeper starts its wait again."""
    sleeper: TaskHandle | None = None
    asleep: bool = False
    """Put to sleep: ``slot`` is the closed slot, kept for its catalog."""
    kept: SessionSlot | None = None
    """The last session that was ready: its catalog stands for the server after that session is lost (a crash, a
    dead HTTP server), also when a reconnect fails, so the model keeps the tools whose next call reconnects."""
    waking: bool = False
    """The start under way wakes a sleeping server (or retries a wake that failed)."""
    wake_failures: int = 0
    retry_at: float = 0.0
    """A wake that failed is tried again by the first request from this time on (``anyio.current_time``)."""

    def woke(self, failure: AppError | None) -> None:
        """A wake ended: a failure is treated like a lost session, tried again on demand after a growing pause."""
        if not self.waking or (failure is not None and failure.reason == "cancelled"):
            return
        if failure is None:
            self.wake_failures = 0
            return
        self.wake_failures += 1
        self.retry_at = anyio.current_time() + min(WAKE_RETRY_MAX_S, WAKE_RETRY_S * 2 ** (self.wake_failures - 1))

    def wake_again(self) -> bool:
        """Whether a request should start the server again: its wake failed, and the pause since has passed."""
        settled = self.ready.is_set() and (self.slot is None or not self.slot.connected)
        return bool(self.wake_failures) and settled and anyio.current_time() >= self.retry_at

    @property
    def starting(self) -> bool:
        return self.task is not None and not self.ready.is_set()

    def catalog_slot(self) -> SessionSlot | None:
        """The slot whose catalog is served: the live one, the one asleep, else the last one that was ready."""
        slot = self.slot
        if slot is not None and (slot.connected or self.asleep):
            return slot
        return self.kept

    def may_sleep(self) -> bool:
        """Nothing holds the server awake: no request in flight, no open subscription."""
        return not self.busy and (self.slot is None or not self.slot.subscriptions)

    @asynccontextmanager
    async def use(self) -> AsyncIterator[object]:
        """A request to the server: while one is in flight it may not sleep, and its end starts the wait for sleep
        again."""
        self.busy += 1
        self.touched.set()
        try:
            yield self
        finally:
            self.busy -= 1
            self.touched.set()

    async def sleep_when_due(self, name: str, thread_id: str, closed: Callable[[], bool]) -> None:
        """Wait for ``idleTimeoutMs`` without a use while the server may sleep (any use starts the wait again),
        then put it to sleep: close its connection, keep its slot for the catalog."""
        timeout = self.config.idle_timeout_ms / 1000
        while True:
            self.touched = anyio.Event()
            if not self.may_sleep():
                await self.touched.wait()
                continue
            with anyio.move_on_after(timeout) as wait:
                await self.touched.wait()
            if wait.cancelled_caught and self.may_sleep():
                break
        slot = self.slot
        if slot is None or not slot.connected or closed():
            return
        self.asleep = True
        self.sleeper = None
        await slot.close()
        log.info("server_asleep", server=name, thread_id=thread_id, idle_ms=self.config.idle_timeout_ms)
