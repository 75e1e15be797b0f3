"""The owners loaded off the event loop: a daemon that is about to start servers imports them (and the SDK's client
side) in a worker thread, so the loop keeps answering while they load."""

from __future__ import annotations

import anyio

from mcp_runtime._sdk_compat import load_sdk


def _import_owners() -> None:
    import mcp_runtime.owners.management
    import mcp_runtime.owners.thread  # noqa: F401


async def load_owners() -> None:
    """Both owners' modules and the SDK's client side; at once when they are loaded already."""
    await anyio.to_thread.run_sync(_import_owners)
    await load_sdk()
