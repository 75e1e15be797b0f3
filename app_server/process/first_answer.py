"""The first answer: work that would compete with a host's first answer (logging set-up, autostart, loading the
handlers) waits for it, so one object says when it came."""

from __future__ import annotations

import anyio

QUIET_S = 0.25
"""How long to wait without an answer (a host that asks nothing) before the waiting work goes ahead."""


class FirstAnswer:
    """Set by the processor once a request has been answered; awaited by start-up's loading and autostart."""

    def __init__(self) -> None:
        self._answered = anyio.Event()

    def answered(self) -> None:
        self._answered.set()

    async def wait(self) -> None:
        """Until the first request has been answered, or ``QUIET_S`` without one."""
        with anyio.move_on_after(QUIET_S):
            await self._answered.wait()
