"""The loopback redirect listener of one login: 127.0.0.1, one exact path, one request.

A tiny HTTP/1.x reader rather than a web framework, because all it may do is take one bounded GET, compare
``state`` in constant time and log nothing it received (a code, a state, an error description).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from protocol.jsonrpc import AppError

_MAX_HEAD_BYTES = 8 * 1024
_READ_TIMEOUT_S = 10.0
_PAGE = "<!doctype html><meta charset=utf-8><title>{title}</title><p>{title}. You can close this window.</p>"


@dataclass(frozen=True)
class CallbackResult:
    """What the authorization server sent back (secrets: kept in memory, never logged)."""

    code: str
    state: str
    iss: str | None


class CallbackServer:
    """``async with CallbackServer(path) as cb``: ``cb.redirect_uri``, ``cb.expect_state(...)``, ``await cb.wait()``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._state: str | None = None
        self._done = anyio.Event()
        self._result: CallbackResult | AppError | None = None
        self._listener: anyio.abc.Listener[anyio.abc.SocketStream] | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self.port = 0

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def expect_state(self, state: str) -> None:
        """The ``state`` of the authorization URL handed out; a callback carrying another one fails the login."""
        self._state = state

    async def __aenter__(self) -> CallbackServer:
        self._listener = listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(listener.serve, self._handle)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._tg is not None and self._listener is not None
        self._tg.cancel_scope.cancel()
        try:
            # The serving task never raises; the body's exception (if any) propagates as itself, not grouped.
            await self._tg.__aexit__(None, None, None)
        finally:
            await self._listener.aclose()

    async def wait(self) -> CallbackResult:
        """The accepted callback; raises ``oauthFailed`` for a denial, a wrong state or a missing code."""
        await self._done.wait()
        if isinstance(self._result, AppError):
            raise self._result
        assert self._result is not None
        return self._result

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            try:
                with anyio.fail_after(_READ_TIMEOUT_S):
                    head = await BufferedByteReceiveStream(stream).receive_until(b"\r\n\r\n", _MAX_HEAD_BYTES)
            except (TimeoutError, anyio.IncompleteRead, anyio.DelimiterNotFound, anyio.EndOfStream, OSError):
                return
            status, title = self._route(head)
            body = _PAGE.format(title=title).encode()
            response = (
                f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
                "Cache-Control: no-store\r\nConnection: close\r\n\r\n"
            ).encode() + body
            try:
                await stream.send(response)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return

    def _route(self, head: bytes) -> tuple[str, str]:
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = request_line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return "400 Bad Request", "Bad request"
        method, target = parts[0], urlsplit(parts[1])
        if target.path != self.path:
            return "404 Not Found", "Not found"
        if method != "GET":
            return "405 Method Not Allowed", "Method not allowed"
        if self._done.is_set():
            return "410 Gone", "This sign-in link was already used"
        self._result = self._parse(parse_qs(target.query, keep_blank_values=True))
        self._done.set()
        if isinstance(self._result, AppError):
            return "400 Bad Request", "Sign-in failed"
        return "200 OK", "Sign-in complete"

    def _parse(self, query: dict[str, list[str]]) -> CallbackResult | AppError:
        def one(name: str) -> str | None:
            values = query.get(name)
            return values[0] if values and len(values) == 1 else None

        state = one("state")
        if self._state is None or state is None or not secrets.compare_digest(state, self._state):
            return AppError("oauthFailed", "the authorization callback carried the wrong state", step="callback")
        error = one("error")
        if error is not None:
            # Only a short token-like error code is echoed (never the free-form description).
            code = error if error.replace("_", "").isalnum() and len(error) <= 64 else "invalid"
            if code == "access_denied":
                return AppError("oauthFailed", "the authorization was denied", step="callback", oauthError=code)
            return AppError(
                "oauthFailed", f"the authorization server returned {code}", step="callback", oauthError=code
            )
        grant = one("code")
        if not grant:
            return AppError("oauthFailed", "the authorization callback carried no code", step="callback")
        return CallbackResult(code=grant, state=state, iss=one("iss"))
