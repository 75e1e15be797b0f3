"""The owners loaded off the event loop: a daemon that is about to start servers imports them (and the SDK's client
side) in a worker thread, so the loop keeps answering while they load."""

from __future__ import annotations

import anyio

from mcp_runtime._sdk_compat import load_sdk, serially


def _import_management() -> None:
    import mcp_runtime.owners.management  # noqa: F401


async def load_owners() -> None:
    """What autostart's sessions need, in the order they need it: the SDK's client side, then the management owner
    (a thread's owner is not on that path: it loads with the handlers, once autostart's sessions are ready); at
    once when they are loaded already."""
    await load_sdk()
    await anyio.to_thread.run_sync(serially, _import_management)


def _import_thread_owner() -> None:
    import mcp_runtime.owners.thread  # noqa: F401


async def load_thread_owner() -> None:
    """A thread's owner, off the loop (so a first ``thread/start`` does not import it on the loop)."""
    await anyio.to_thread.run_sync(serially, _import_thread_owner)
