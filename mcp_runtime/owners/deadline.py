"""A tool call's deadline that stops while a form is open (SPEC §16: ``toolTimeoutMs`` counts the server's time,
never the time a person spends on a form the server asked for)."""

from __future__ import annotations

import math
from typing import Any

import anyio

FORM_BACKSTOP_S = 86_400.0
"""The SDK's own read timeout of a call: past the call's deadline by a day, so only the call's deadline (which stops
while a form is open) ends it, and a request the SDK lost track of still ends."""


def runs_as_task(tool: Any, *, background: bool = False) -> bool:
    """A tool called as a task (MCP 2025-11-25): one that must be (``execution.taskSupport: "required"``), and one
    that may be (``optional``) when the host asked for a background call."""
    execution = (tool.model_extra or {}).get("execution")
    support = execution.get("taskSupport") if isinstance(execution, dict) else None
    return support == "required" or (background and support == "optional")


class CallDeadline:
    """The call's remaining time, kept on its cancel scope; paused while at least one form of the call is open."""

    def __init__(self, scope: anyio.CancelScope, limit_s: float) -> None:
        self._scope = scope
        self._remaining = limit_s
        self._open_forms = 0
        scope.deadline = anyio.current_time() + limit_s

    def pause(self) -> None:
        """A form opened: the clock stops (once, however many forms are open)."""
        if self._open_forms == 0:
            self._remaining = max(0.0, self._scope.deadline - anyio.current_time())
            self._scope.deadline = math.inf
        self._open_forms += 1

    def resume(self) -> None:
        """A form closed: the clock runs again from where it stopped, once no form is open."""
        self._open_forms -= 1
        if self._open_forms == 0:
            self._scope.deadline = anyio.current_time() + self._remaining
