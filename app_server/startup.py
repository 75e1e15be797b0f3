"""Start-up's background work: once the host's first request is answered, load what the other requests and the
server starts need, freeze it (``app_server.collector``), then start the servers enabled in the store.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import anyio

from app_server import collector
from app_server.logs import configure as configure_logging
from app_server.logs import get_logger

if TYPE_CHECKING:
    from app_server.daemon import Daemon

log = get_logger("app_server.startup")
QUIET_S = 0.25
"""Start-up's loading waits for the first answer, or this long without one (a host that asks nothing)."""
LOAD_SWITCH_INTERVAL_S = 0.0005
"""GIL switch interval while a worker thread imports: the loop thread gets the GIL back within about this long."""


async def load(daemon: Daemon, load_dispatch: Callable[[], None], announce: Callable[[], None]) -> None:
    """Started with the daemon: after the first answer, set up logging and ``announce`` the daemon, then load in a
    worker thread (the loop keeps answering meanwhile) every handler (``load_dispatch``) and, when servers are to
    be autostarted, the MCP SDK."""
    with anyio.move_on_after(QUIET_S):
        await daemon.first_answer.wait()
    configure_logging()
    announce()
    try:
        await anyio.to_thread.run_sync(_off_loop, load_dispatch)
        if daemon.autostart:
            from mcp_runtime import load_sdk

            await anyio.to_thread.run_sync(_off_loop, _load_runtime)
            await load_sdk()
    finally:  # even when a load failed (the Spawner reports it): the collector runs again, autostart goes on
        frozen = collector.freeze_loaded()
        daemon.loaded.set()
        log.debug("loaded", frozen_objects=frozen)


async def autostart(daemon: Daemon, enabled: Sequence[str]) -> None:
    """Start ``enabled`` in their management connections once start-up has loaded."""
    await daemon.loaded.wait()
    await daemon.manager.start_enabled(enabled)


async def read_login_path(daemon: Daemon) -> None:
    """Read the login shell's ``PATH`` while start-up loads, so the servers' starts find it read: after the first
    answer, like the loading, since the shell's process competes with the daemon for the machine."""
    with anyio.move_on_after(QUIET_S):
        await daemon.first_answer.wait()
    from mcp_runtime import login_folders

    await login_folders()


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
