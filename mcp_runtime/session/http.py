"""Streamable HTTP servers: the SDK's ``streamable_http_client`` over an ``httpx2.AsyncClient`` whose transport
refuses redirects, oversized bodies and (without an auth provider) 401s by answering the request with a synthetic
JSON-RPC error carrying ``data.reason``, so that one request fails with a typed reason and the connection survives.
On the 2026-07-28 wire, a result the server sent without ``resultType`` is ``complete`` (SEP-2322's default).
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import anyio

from mcp_runtime.limits import MAX_SERVER_MESSAGE_BYTES
from mcp_runtime.session.http_refusal import RefusalLog, read_capped, session_gone
from mcp_runtime.session.refusal import REASON_MARKER, refusal_body
from protocol.config import HttpServerConfig
from protocol.jsonrpc import AppError

if TYPE_CHECKING:
    import httpx2

    from mcp_runtime._sdk_compat import TransportStreams

HTTP_CONNECT_TIMEOUT_S = 30.0
VERSION_META = "io.modelcontextprotocol/protocolVersion"
MAX_TRACKED = 4096
"""Ids of 2026-era requests in flight remembered at most (a request never answered must not leak)."""


def resolve_headers(config: HttpServerConfig, env: Mapping[str, str]) -> dict[str, str]:
    """Static headers plus env-referenced ones; an unset variable fails before any network traffic."""
    refs = [(header, variable, "") for header, variable in config.env_headers.items()]
    if config.bearer_token_env_var:
        refs.append(("Authorization", config.bearer_token_env_var, "Bearer "))
    headers = dict(config.headers)
    for header, variable, prefix in refs:
        value = env.get(variable)
        if not value:
            raise AppError("missingEnvVar", f"environment variable {variable} is not set", variable=variable)
        if any(ch in value for ch in "\r\n\0"):
            raise AppError("invalidHeader", f"the value of {variable} contains CR, LF or NUL", header=header)
        headers[header] = prefix + value
    return headers


def _refusal(request: httpx2.Request, reason: str, message: str, **details: Any) -> httpx2.Response:
    import httpx2

    body = refusal_body(AppError(reason, message, **details))
    return httpx2.Response(400, headers={"content-type": "application/json"}, content=body, request=request)


def _policy_transport(
    inner: httpx2.AsyncBaseTransport, *, refuse_401: bool, refusals: RefusalLog
) -> httpx2.AsyncBaseTransport:
    import httpx2

    class _TooLarge(httpx2.StreamError):
        pass

    class _Bounded(httpx2.AsyncByteStream):
        def __init__(self, stream: httpx2.AsyncByteStream) -> None:
            self._stream = stream

        async def __aiter__(self) -> AsyncIterator[bytes]:
            seen = 0
            async for chunk in self._stream:
                seen += len(chunk)
                if seen > MAX_SERVER_MESSAGE_BYTES:
                    raise _TooLarge(f"{REASON_MARKER}=responseTooLarge: body over {MAX_SERVER_MESSAGE_BYTES} bytes")
                yield chunk

        async def aclose(self) -> None:
            await self._stream.aclose()

    class PolicyTransport(httpx2.AsyncBaseTransport):
        """Refuse redirects, 401 without auth and bodies over the server message limit before the SDK parses
        anything."""

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            response = await inner.handle_async_request(request)
            status = response.status_code
            refusal: tuple[str, str] | None = None
            if 300 <= status < 400:
                refusal = ("redirectRejected", f"the server answered with a redirect ({status}); redirects are refused")
            elif status == 401 and refuse_401:
                refusal = ("authRequired", "the server requires authentication (HTTP 401)")
            else:
                length = response.headers.get("content-length")
                if length is not None and length.isdigit() and int(length) > MAX_SERVER_MESSAGE_BYTES:
                    refusal = ("responseTooLarge", f"the response body is {length} bytes, over the limit")
            if refusal is not None:
                await response.aclose()
                return _refusal(request, *refusal)
            if status >= 400 and status not in (401, 403):  # kept to name a failed start (auth answers are the auth
                # layer's); handed on as read (an error body is small)
                body = await read_capped(response)
                await response.aclose()
                refusals.note(status, body)
                if request.headers.get("mcp-session-id") and session_gone(status, body):
                    # A restarted server: the session is lost (its catalog kept, the next use reconnects).
                    said = refusals.last.describe() if refusals.last is not None else f"HTTP {status}"
                    message = f"the server no longer knows this session ({said}): it restarted or ended the session"
                    return _refusal(request, "connectionLost", message, detail="sessionExpired")
                dropped = ("content-length", "content-encoding", "transfer-encoding")
                headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in dropped]
                return httpx2.Response(status, headers=headers, content=body, request=request)
            if not response.headers.get("content-type", "").lower().startswith("text/event-stream"):
                # SSE is bounded per event by the SDK (max_sse_event_size); anything else is read whole.
                response.stream = _Bounded(response.stream)  # type: ignore[arg-type]
            return response

        async def aclose(self) -> None:
            await inner.aclose()

    return PolicyTransport()


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    """One verifying TLS context shared by every HTTP connection (building one costs milliseconds)."""
    import httpx2

    return httpx2.create_ssl_context()


class _CompleteByDefault:
    """SEP-2322's default for the streams of one session: a 2026-07-28 result without ``resultType`` is
    ``complete``.

    The SDK refuses such a result as malformed, which loses a call the server completed. The write side notes
    which requests carry the 2026 ``_meta`` (the era is per request there) and their method; the read side fills
    the default into their results, when the result is a complete result of that method (else it is left for the
    SDK to refuse: its 2026 union would take any ``complete`` dict as an input-required result).
    """

    def __init__(self) -> None:
        self._modern: dict[Any, str] = {}

    def sent(self, item: Any) -> None:
        message = item.message
        params = getattr(message, "params", None)
        method = getattr(message, "method", None)
        if method is None or getattr(message, "id", None) is None:
            return
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(VERSION_META) if isinstance(meta, dict) else None
        if version in _modern_versions():
            if len(self._modern) >= MAX_TRACKED:
                del self._modern[next(iter(self._modern))]
            self._modern[message.id] = f"{method} {version}"

    def received(self, item: Any) -> Any:
        message = getattr(item, "message", None)
        result = getattr(message, "result", None)
        asked = self._modern.pop(getattr(message, "id", None), None)
        if asked is not None and isinstance(result, dict) and "resultType" not in result:
            candidate = {**result, "resultType": "complete"}
            method, version = asked.split(" ", 1)
            if _is_complete(method, version, candidate):
                result["resultType"] = "complete"
        return item


def _is_complete(method: str, version: str, result: dict[str, Any]) -> bool:
    """Whether ``result`` is a complete result of ``method`` at ``version`` (never an input-required one)."""
    from pydantic import ValidationError

    adapter = _complete_adapter(method, version)
    if adapter is None:
        return False
    try:
        adapter.validate_python(result, by_name=False)
    except ValidationError:
        return False
    return True


@functools.cache
def _complete_adapter(method: str, version: str) -> Any:
    import typing

    from mcp_types.methods import SERVER_RESULTS
    from pydantic import TypeAdapter

    surface = SERVER_RESULTS.get((method, version))
    if surface is None:
        return None
    complete = [kind for kind in typing.get_args(surface) or (surface,) if kind.__name__ != "InputRequiredResult"]
    return TypeAdapter(complete[0]) if len(complete) == 1 else None


class _Wrapped:
    """A stream of the SDK's transport with one hook on its items; everything else passes through."""

    def __init__(self, inner: Any, fix: _CompleteByDefault) -> None:
        self._inner, self._fix = inner, fix

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc, tb)  # type: ignore[no-any-return]


class _Reads(_Wrapped):
    async def receive(self) -> Any:
        return self._fix.received(await self._inner.receive())

    def __aiter__(self) -> _Reads:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None


class _Writes(_Wrapped):
    async def send(self, item: Any) -> None:
        self._fix.sent(item)
        await self._inner.send(item)


@functools.cache
def _modern_versions() -> frozenset[str]:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return frozenset(MODERN_PROTOCOL_VERSIONS)


class HttpTransport:
    """One connection's streamable HTTP transport, keeping what its server refused (``refusals``) so that a failed
    start can say it."""

    def __init__(self, config: HttpServerConfig, headers: dict[str, str], auth: httpx2.Auth | None) -> None:
        self.url = config.url
        self.refusals = RefusalLog()
        self._cm = http_transport(config, headers, auth, self.refusals)

    async def __aenter__(self) -> TransportStreams:
        return await self._cm.__aenter__()

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._cm.__aexit__(*exc)


@asynccontextmanager
async def http_transport(
    config: HttpServerConfig, headers: dict[str, str], auth: httpx2.Auth | None, refusals: RefusalLog
) -> AsyncIterator[TransportStreams]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    # No read timeout at the HTTP layer: every request carries the SDK's own timeout, and on 2026-era HTTP an
    # httpx read timeout would kill the whole client (and any quiet subscriptions/listen stream with it).
    client = httpx2.AsyncClient(
        headers=headers,
        auth=auth,
        follow_redirects=False,
        timeout=httpx2.Timeout(HTTP_CONNECT_TIMEOUT_S, read=None),
        transport=_policy_transport(
            httpx2.AsyncHTTPTransport(verify=_ssl_context()), refuse_401=auth is None, refusals=refusals
        ),
    )
    async with (
        client,
        streamable_http_client(
            config.url, http_client=client, max_sse_event_size=MAX_SERVER_MESSAGE_BYTES
        ) as (read, write),
    ):
        fix = _CompleteByDefault()
        yield _Reads(read, fix), _Writes(write, fix)
