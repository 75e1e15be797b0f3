"""Every use of a private member of the MCP SDK (and of ``httpx2``, its HTTP client), in one place.

The SDK gives no public hook for some things the runtime needs (bounding the first ``server/discover`` probe,
advertising form-only elicitation, swapping the elicitation callback, driving input-required rounds of our own
``tools/call``, learning which tools a listing left out, building and reading the token requests of a refresh or a
client-credentials grant outside its auth flow);
``tests/session/test_sdk_compat.py`` asserts that each member below still exists with the shape used, so an SDK
upgrade that moves one fails there, by name, instead of quietly in a session.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    import httpx2
    from mcp import Client
    from mcp.client._transport import TransportStreams as TransportStreams
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
    )
    from mcp.client.session import ClientSession

INHERITED_ENV_VARS = (
    ("APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT", "PROCESSOR_ARCHITECTURE", "SYSTEMDRIVE",
     "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE")
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
)  # fmt: skip
"""``mcp.client.stdio.DEFAULT_INHERITED_ENV_VARS``, the variables a stdio server inherits, copied so that a child
starts before the SDK is imported (a function's skip of values starting ``()`` goes with it, in ``launch``)."""

AUTO_DISCOVER_TIMEOUT_S = 1.0
"""``protocol: auto`` must not stall on a server that ignores ``server/discover`` (SDK default: 10 s)."""

PRIVATE_MEMBERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "Client._build_session": ("mcp.Client", ("self", "exit_stack")),
    "Client._drive_input_required": ("mcp.Client", ("self", "first", "retry")),
    "ClientSession._build_capabilities": ("mcp.client.session.ClientSession", ("self", "version")),
    "ClientSession._elicitation_callback": ("mcp.client.session.ClientSession", ()),
    "ClientSession._absorb_tool_listing": ("mcp.client.session.ClientSession", ("self", "result", "complete")),
    "ClientSession._stamp": ("mcp.client.session.ClientSession", ()),
    "ClientSession._dispatcher": ("mcp.client.session.ClientSession", ()),
    "OAuthClientProvider._refresh_token": ("mcp.client.auth.OAuthClientProvider", ("self",)),
    "OAuthClientProvider._handle_refresh_response": ("mcp.client.auth.OAuthClientProvider", ("self", "response")),
    "OAuthClientProvider._handle_token_response": ("mcp.client.auth.OAuthClientProvider", ("self", "response")),
    "ClientCredentialsOAuthProvider._exchange_token_client_credentials": (
        "mcp.client.auth.extensions.client_credentials.ClientCredentialsOAuthProvider",
        ("self",),
    ),
    "PrivateKeyJWTOAuthProvider._exchange_token_client_credentials": (
        "mcp.client.auth.extensions.client_credentials.PrivateKeyJWTOAuthProvider",
        ("self",),
    ),
    "Response._content": ("httpx2.Response", ()),
}
"""The private members used here: qualified name → (owning class, parameter names; () for an attribute)."""

PRIVATE_TYPES = ("mcp.client._transport.TransportStreams",)
"""Private SDK names used in annotations only (imported under ``TYPE_CHECKING``, re-exported from here)."""


_IMPORTS = threading.Lock()
"""Held by every import made off the loop: two threads importing one package from different modules each take
one module's lock and wait for the other's, and Python ends that with ``_DeadlockError`` in one of them."""
_sdk_loaded = False


def serially(load: Callable[[], None]) -> None:
    """Run ``load`` (imports, in a worker thread) while no other thread imports through here."""
    with _IMPORTS:
        load()


def _import_client_side() -> None:
    """Everything the runtime takes from the SDK, the package first, so that no later import on the loop (a login's,
    a session's) imports a module of it while a worker does."""
    global _sdk_loaded
    with _IMPORTS:
        if _sdk_loaded:
            return
        import mcp
        import mcp.client.auth
        import mcp.client.stdio
        import mcp.client.streamable_http
        import mcp.shared.auth  # noqa: F401

        _sdk_loaded = True


async def load_sdk() -> None:
    """Import the SDK's client side in a worker thread: imported inside a start, it would stall the event loop,
    and every status read with it, while a server is already announced as starting. Returns once it is imported
    whole (a module being imported is in ``sys.modules`` already, so that is no sign)."""
    if not _sdk_loaded:
        await anyio.to_thread.run_sync(_import_client_side)


@functools.cache
def plain_client() -> type[Client]:
    """``Client`` whose sessions with an elicitation callback (thread connections) also declare task support
    (SPEC §5, §16); the SDK already advertises both elicitation modes with a callback, and none without."""
    from mcp import Client

    class ThreadCapableClient(Client):
        async def _build_session(self, exit_stack: Any) -> Any:
            session = await super()._build_session(exit_stack)
            advertise_tasks(session)
            return session

    return ThreadCapableClient


TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""2026-07-28 carries tasks as an extension; 2025-11-25 as the ``tasks`` capability."""


def advertise_tasks(session: ClientSession) -> None:
    """Add task support to the capabilities a session with an elicitation callback advertises, in every era
    (the handshake's ``capabilities`` and the 2026 envelope's both come from ``_build_capabilities``)."""
    import mcp_types as types

    build = session._build_capabilities

    def with_tasks(version: str) -> types.ClientCapabilities:
        capabilities = build(version)
        if capabilities.elicitation is None:
            return capabilities
        extensions = {**(capabilities.extensions or {}), TASKS_EXTENSION: {}}
        return capabilities.model_copy(update={"tasks": types.ClientTasksCapability(), "extensions": extensions})

    session._build_capabilities = with_tasks  # type: ignore[method-assign]


async def send_unchecked(session: ClientSession, request: Any, *, timeout_s: float) -> dict[str, Any]:
    """Send a request whose answer the session must not check against its method's core result: a ``tools/call``
    sent as a task is answered with a ``CreateTaskResult``, which the session would refuse as a bad
    ``CallToolResult``."""
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    opts: Any = {}
    session._stamp(data, opts)
    opts["timeout"] = timeout_s
    return await session._dispatcher.send_raw_request(data["method"], data.get("params"), opts)


@functools.cache
def probe_bounded_client(refusal: Callable[[Any], Exception | None]) -> type[Client]:
    """``Client`` whose first ``server/discover`` probe gives up soon (``protocol: auto``): the SDK's timeout is a
    process-wide global, and a server that ignores the probe must not stall its start.

    Only the first probe is shortened: the SDK probes again once the fallback ``initialize`` proves the server
    modern, and a slow-starting server must not fail that second probe (both stay within the startup timeout).
    A probe our own HTTP layer refused (a login needed, a redirect, an oversized body: ``refusal`` reads that
    typed error back from the JSON-RPC error, else None) fails the start with it instead of falling back:
    ``initialize`` would only be refused the same way, or by a server that speaks 2026-07-28 only.
    """
    from mcp.shared.exceptions import MCPError
    from mcp_types import REQUEST_TIMEOUT

    class ProbeBoundedClient(plain_client()):  # type: ignore[misc]
        async def _build_session(self, exit_stack: Any) -> Any:
            session = await super()._build_session(exit_stack)
            probe: Callable[[str], Awaitable[dict[str, Any]]] = session.send_discover
            first = True

            async def send_discover(version: str) -> dict[str, Any]:
                nonlocal first
                if not first:
                    return await probe(version)
                first = False
                with anyio.move_on_after(AUTO_DISCOVER_TIMEOUT_S):
                    try:
                        return await probe(version)
                    except MCPError as exc:
                        if (refused := refusal(exc.error)) is not None:
                            raise refused from None
                        raise
                raise MCPError(REQUEST_TIMEOUT, "server/discover was not answered")

            session.send_discover = send_discover
            return session

    return ProbeBoundedClient


def set_elicitation_callback(session: ClientSession, callback: Callable[[Any, Any], Awaitable[Any]]) -> None:
    """Replace the callback after the handshake (capabilities were already sent without elicitation)."""
    session._elicitation_callback = callback  # type: ignore[assignment]


def absorb_tool_listing(session: ClientSession, result: Any, *, complete: bool) -> Any:
    """What the session's ``list_tools`` does with a page it fetched (2026-07-28: tools with invalid
    ``x-mcp-header`` annotations left out, the others' header maps kept for ``tools/call``), for a page we
    fetched ourselves to see what it left out."""
    return session._absorb_tool_listing(result, complete=complete)


async def drive_input_required(client: Client, first: Any, retry: Callable[[Any, str | None], Awaitable[Any]]) -> Any:
    """The SDK's multi-round input-required loop (2026 era) over a request we sent ourselves."""
    return await client._drive_input_required(first, retry)


async def refresh_request(provider: OAuthClientProvider) -> httpx2.Request:
    """The SDK's refresh-token request (client authentication, ``resource``) for the provider's current tokens."""
    return await provider._refresh_token()


async def accept_refresh(provider: OAuthClientProvider, response: httpx2.Response) -> bool:
    """The SDK's handling of a refresh response (rotation, scope carried forward, storage); False when refused."""
    return await provider._handle_refresh_response(response)


async def client_credentials_request(
    provider: ClientCredentialsOAuthProvider | PrivateKeyJWTOAuthProvider,
) -> httpx2.Request:
    """The SDK's client-credentials token request, authenticated by secret or signed assertion (it insists on
    metadata of the configured issuer)."""
    return await provider._exchange_token_client_credentials()


async def accept_token(provider: OAuthClientProvider, response: httpx2.Response) -> None:
    """The SDK's handling of a token response (scope checks, expiry, storage); raises when refused."""
    await provider._handle_token_response(response)


def replace_read_body(response: httpx2.Response, body: bytes) -> None:
    """Replace the body of a response an in-memory transport built already read (``response.stream`` is then
    not read again); a streamed response needs only its ``stream`` replaced."""
    if hasattr(response, "_content"):
        response._content = body


@functools.cache
def call_result_adapter() -> Any:
    """Built once: a pydantic TypeAdapter over a union is too costly to construct per call."""
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
own -32700, so ``tests/session/test_sdk_compat.py`` checks the SDK still says it."""
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
