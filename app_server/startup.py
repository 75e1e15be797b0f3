"""Start-up's background work once the client is initialized: load what requests need, then start the enabled
servers; and the garbage-collector policy, which belongs to it.

The collector keeps CPython's default thresholds. Once the modules, the models and (when servers are enabled) the
MCP SDK are loaded, ``gc.freeze()`` moves them out of the collector for good: they live as long as the process,
so no full collection needs to walk them again.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import anyio

from app_server.logs import configure as configure_logging

if TYPE_CHECKING:
    from app_server.daemon import Daemon

QUIET_S = 0.25
"""Start-up's background work waits for the first answer, or this long without one (a host that asks nothing)."""
LOAD_SWITCH_INTERVAL_S = 0.0005
"""GIL switch interval while a worker thread imports: the loop thread gets the GIL back within about this long."""


async def start_up(daemon: Daemon, enabled: Sequence[str], load_dispatch: Callable[[], None]) -> None:
    """Once the host's first request is answered: load in a worker thread (the loop keeps answering meanwhile)
    what requests need (``load_dispatch``) and what starting servers needs, freeze, then start ``enabled``."""
    with anyio.move_on_after(QUIET_S):
        await daemon.first_answer.wait()
    configure_logging()
    await anyio.to_thread.run_sync(_off_loop, load_dispatch)
    if enabled:
        from mcp_runtime import load_sdk

        await anyio.to_thread.run_sync(_off_loop, _load_runtime)
        await load_sdk()
    gc.freeze()
    if enabled:
        await daemon.manager.start_enabled(enabled)


def _off_loop(load: Callable[[], None]) -> None:
    """Run imports in this worker thread with a short switch interval, so the loop thread waits little for the
    GIL the importing thread holds."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(min(previous, LOAD_SWITCH_INTERVAL_S))
    try:
        load()
    finally:
        sys.setswitchinterval(previous)


def _load_runtime() -> None:
    """The management owner (it imports the MCP SDK's core)."""
    from mcp_runtime import McpClientManager  # noqa: F401
