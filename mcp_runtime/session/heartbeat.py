"""A management connection to an HTTP server asks it, now and then, whether it is still there (SPEC §4, issue 46).

An HTTP server that dies sends nothing: no closed pipe, and the SDK's streams stay quiet, so its row said
``connected`` until something used it. A ping (2025 era) or ``server/discover`` (2026 era, which has no ping)
every ``HEARTBEAT_S`` notices it: a refused connection ends the session like any loss (the owner restarts it with
backoff), and a server that answers with an error is alive, unless the error says it no longer knows the session
(it restarted): that session is lost too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio

from protocol.jsonrpc import AppError

if TYPE_CHECKING:
    from mcp import Client

HEARTBEAT_S = 10.0
"""Seconds between two questions; the answer is awaited at most this long too."""


async def heartbeat(
    client: Client,
    *,
    modern: bool,
    version: str | None,
    lose: Callable[[AppError], None],
    interval: float = HEARTBEAT_S,
) -> None:
    """Runs in the session's task group until it ends; a lost connection is raised by the SDK's session itself."""
    from mcp.shared.exceptions import MCPError

    from mcp_runtime.session.errors import marked_reason

    session = client.session
    while True:
        await anyio.sleep(interval)
        try:
            with anyio.fail_after(interval):
                if modern and version is not None:
                    await session.send_discover(version)
                else:
                    await session.send_ping()
        except TimeoutError:
            lose(AppError("connectionLost", f"the server stopped answering (no answer within {interval:.0f} s)"))
            return
        except MCPError as exc:
            if (gone := marked_reason(exc.error)) is not None and gone.reason == "connectionLost":
                lose(gone)  # a server that restarted and no longer knows the session
                return
            continue  # an answer, even an error, is a live server; a closed connection ends the session anyway
