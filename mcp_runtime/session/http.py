"""Streamable HTTP servers: the SDK's ``streamable_http_client`` over an ``httpx2.AsyncClient`` whose transport
refuses redirects, oversized bodies and (without an auth provider) 401s by answering the request with a synthetic
JSON-RPC error carrying ``data.reason``, so that one request fails with a typed reason and the connection survives.
"""

from __future__ import annotations

import functools
import json
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from mcp_runtime.limits import MAX_MESSAGE_BYTES
from mcp_runtime.session.upstream_guard import REASON_MARKER
from protocol.config import HttpServerConfig
from protocol.jsonrpc import REASON_CODES, AppError

if TYPE_CHECKING:
    import httpx2

    from mcp_runtime._sdk_compat import TransportStreams

HTTP_CONNECT_TIMEOUT_S = 30.0


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


def _refusal(request: httpx2.Request, reason: str, message: str) -> httpx2.Response:
    import httpx2

    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": int(REASON_CODES[reason]), "message": message, "data": {REASON_MARKER: reason}},
    }
    return httpx2.Response(
        400, headers={"content-type": "application/json"}, content=json.dumps(body).encode(), request=request
    )


def _policy_transport(inner: httpx2.AsyncBaseTransport, *, refuse_401: bool) -> httpx2.AsyncBaseTransport:
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
                if seen > MAX_MESSAGE_BYTES:
                    raise _TooLarge(f"{REASON_MARKER}=responseTooLarge: body over {MAX_MESSAGE_BYTES} bytes")
                yield chunk

        async def aclose(self) -> None:
            await self._stream.aclose()

    class PolicyTransport(httpx2.AsyncBaseTransport):
        """Refuse redirects, 401 without auth and bodies over 4 MiB before the SDK parses anything."""

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
                if length is not None and length.isdigit() and int(length) > MAX_MESSAGE_BYTES:
                    refusal = ("responseTooLarge", f"response body over {MAX_MESSAGE_BYTES} bytes")
            if refusal is not None:
                await response.aclose()
                return _refusal(request, *refusal)
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


@asynccontextmanager
async def http_transport(
    config: HttpServerConfig, headers: dict[str, str], auth: httpx2.Auth | None
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
        transport=_policy_transport(httpx2.AsyncHTTPTransport(verify=_ssl_context()), refuse_401=auth is None),
    )
    async with (
        client,
        streamable_http_client(config.url, http_client=client, max_sse_event_size=MAX_MESSAGE_BYTES) as streams,
    ):
        yield streams
