"""The stop signals: SIGTERM, SIGINT and SIGHUP, caught from the start of start-up until the daemon exits."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

from app_server.process import options

if TYPE_CHECKING:
    import anyio
    from anyio.abc import TaskStatus


class StopSignals:
    """SIGTERM, SIGINT and SIGHUP stop the daemon alike (exit 0). Before the event loop runs, a handler records the
    first and wakes start-up's reader; once the loop runs, its receiver takes them, and one that came before
    stops the daemon at once. They stay caught until the daemon exits, so a repeated SIGTERM during shutdown does
    not kill it midway."""

    def __init__(self) -> None:
        self.first: str | None = None
        self._wake: Callable[[], None] = lambda: None

    def install(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        for signum in options.STOP_SIGNALS:
            signal.signal(signum, self._received)

    def _received(self, signum: int, frame: object) -> None:
        """Runs in the main thread, between its bytecodes."""
        if self.first is None:
            self.first = signal.Signals(signum).name
        self._wake()

    async def watch(self, stop: anyio.Event, *, task_status: TaskStatus) -> None:
        import anyio

        from app_server.process.logs import get_logger

        log = get_logger("app_server.startup")
        with anyio.open_signal_receiver(*options.STOP_SIGNALS) as received:
            task_status.started()
            if self.first is not None:
                log.info("signal_received", signal=self.first)
                stop.set()
            async for signum in received:
                log.info("signal_received", signal=signal.Signals(signum).name)
                stop.set()
