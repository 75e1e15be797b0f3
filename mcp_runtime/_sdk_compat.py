"""Every use of the MCP SDK's private members, in one place.

The SDK (``mcp`` 2.x) gives no public hook for three things the runtime needs: bounding the first
``server/discover`` probe of ``protocol: auto``, swapping the elicitation callback after the handshake (a
management session declines every elicitation), and driving the input-required rounds of a ``tools/call`` we
send ourselves. ``tests/test_sdk_compat.py`` asserts that the members below still exist with these signatures,
so an SDK upgrade that moves them fails loudly there instead of quietly at run time.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from mcp import Client
    from mcp.client.session import ClientSession

AUTO_DISCOVER_TIMEOUT_S = 1.0
"""``protocol: auto`` must not stall on a server that ignores ``server/discover`` (SDK default: 10 s)."""

PRIVATE_MEMBERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "Client._build_session": ("mcp.Client", ("self", "exit_stack")),
    "Client._drive_input_required": ("mcp.Client", ("self", "first", "retry")),
    "ClientSession._elicitation_callback": ("mcp.client.session.ClientSession", ()),
}
"""The private members used here: qualified name → (owning class, parameter names; () for an attribute)."""


def _import_client_side() -> None:
    import mcp.client.stdio
    import mcp.client.streamable_http  # noqa: F401


async def load_sdk() -> None:
    """Import the SDK's client side in a worker thread.

    Imported inside a start, it would stall the event loop, and with it every status read, while a server
    is already announced as starting; from a worker thread the loop keeps answering.
    """
    if "mcp.client.streamable_http" not in sys.modules:
        await anyio.to_thread.run_sync(_import_client_side)


def plain_client() -> type[Client]:
    from mcp import Client

    return Client


@functools.cache
def probe_bounded_client() -> type[Client]:
    """``Client`` whose first ``server/discover`` probe gives up after 1 s (``protocol: auto``).

    The SDK's probe timeout is a process-wide module global (10 s). Only the first probe is shortened: when
    the fallback ``initialize`` proves the server modern (-32022), the SDK re-probes a server that is alive,
    and a slow-starting server must not fail that second probe. Both stay bounded by the startup timeout.
    """
    from mcp import Client
    from mcp.shared.exceptions import MCPError
    from mcp_types import REQUEST_TIMEOUT

    class ProbeBoundedClient(Client):
        async def _build_session(self, exit_stack: Any) -> Any:
            session = await super()._build_session(exit_stack)
            probe = session.send_discover
            first = True

            async def send_discover(version: str) -> dict[str, Any]:
                nonlocal first
                if not first:
                    return await probe(version)
                first = False
                with anyio.move_on_after(AUTO_DISCOVER_TIMEOUT_S):
                    return await probe(version)
                raise MCPError(REQUEST_TIMEOUT, "server/discover was not answered")

            session.send_discover = send_discover  # type: ignore[method-assign]
            return session

    return ProbeBoundedClient


def set_elicitation_callback(session: ClientSession, callback: Callable[[Any, Any], Awaitable[Any]]) -> None:
    """Replace the callback after the handshake (capabilities were already sent without elicitation)."""
    session._elicitation_callback = callback  # type: ignore[assignment]


async def drive_input_required(client: Client, first: Any, retry: Callable[[Any, str | None], Awaitable[Any]]) -> Any:
    """The SDK's multi-round input-required loop (2026 era) over a request we sent ourselves."""
    return await client._drive_input_required(first, retry)


@functools.cache
def call_result_adapter() -> Any:
    """Built once: a pydantic TypeAdapter over the result union costs about a millisecond to construct."""
    import mcp_types as types
    from pydantic import TypeAdapter

    return TypeAdapter(types.CallToolResult | types.InputRequiredResult)


@functools.cache
def checked_result_adapter() -> Any:
    """For results the session has already validated against the negotiated version (``send_request`` runs
    ``validate_server_result`` first): passes the plain dict through."""
    from pydantic import TypeAdapter

    return TypeAdapter(dict[str, Any])


HTTP_PARSE_FAILURES = ("Failed to parse JSON response: ", "Failed to parse SSE message: ")
"""How the SDK's Streamable HTTP transport words the error (code -32700) it puts in place of a reply it cannot
parse. It keeps the request's id, so the call already fails at once; only this text tells it from a server's
own -32700, so ``tests/test_sdk_compat.py`` checks the SDK still says it."""
MAX_DETAIL = 300


def http_parse_failure(code: int, message: str) -> str | None:
    """The plain detail of a malformed reply the SDK's HTTP transport refused, or None for any other error.

    The SDK's message embeds the validation error (with a slice of the reply); only the first problem's
    location and wording are kept.
    """
    from mcp_types import PARSE_ERROR

    if code != PARSE_ERROR or not message.startswith(HTTP_PARSE_FAILURES):
        return None
    lines = message.splitlines()
    found: list[tuple[str, str]] = []
    for index, line in enumerate(lines):
        if " [type=" in line:
            where = lines[index - 1].strip() if index > 0 and not lines[index - 1].startswith(" ") else ""
            found.append(("" if "validation error" in where else where, line.split(" [type=", 1)[0].strip()))
    if not found:
        return "the reply is not a valid JSON-RPC message"
    where, problem = next((pair for pair in found if pair[0].startswith(("JSONRPCResponse", "JSONRPCError"))), found[0])
    return (f"not a valid JSON-RPC message: {where}: {problem}" if where else problem)[:MAX_DETAIL]
