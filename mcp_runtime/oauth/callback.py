"""The loopback redirect listeners of logins: 127.0.0.1, one fixed path, logins told apart by ``state``.

Every login's redirect URI is ``http://127.0.0.1:<port>/oauth/callback`` (SPEC §5), so a pre-registered client can
register it exactly. A configured ``oauth.callbackPort`` may be shared by several logins at once (servers of one
client): one listener per port serves them all and hands each callback to the login whose ``state`` it carries. A
tiny HTTP/1.x reader rather than a web framework, because all it may do is take one bounded GET, compare ``state``
in constant time and log nothing it received (a code, a state, an error description).
"""

from __future__ import annotations

import errno
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
import structlog
from anyio.streams.buffered import BufferedByteReceiveStream

from protocol.jsonrpc import AppError

log = structlog.get_logger("mcp_runtime.oauth.callback")

CALLBACK_PATH = "/oauth/callback"
_MAX_HEAD_BYTES = 8 * 1024
"""A browser's redirect is a few hundred bytes; a longer head is not one."""
_READ_TIMEOUT_S = 3.0
"""A browser sends its request as soon as it connects: a connection silent this long is not one."""
_MAX_CONNECTIONS = 16
"""Connections served at once per port; past it a new one takes the place of the oldest that has not sent its
request yet (a browser sends it as it connects), so idle connections never keep the real redirect out."""
_ACCEPT_PAUSE_S = 0.1
"""After a failed accept (no descriptor free), the pause before the next try."""
_GONE = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)
"""What a connection the peer dropped raises."""
_PAGE = "<!doctype html><meta charset=utf-8><title>{title}</title><p>{title}. You can close this window.</p>"


@dataclass(frozen=True)
class CallbackResult:
    """What the authorization server sent back (secrets: kept in memory, never logged)."""

    code: str
    state: str
    iss: str | None


@dataclass(eq=False)
class Callback:
    """One login's share of a listener: its redirect URI, the ``state`` it waits for, and the answer once it came."""

    redirect_uri: str
    state: str | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    result: CallbackResult | AppError | None = None

    def expect_state(self, state: str) -> None:
        """The ``state`` of the authorization URL handed out: only a callback carrying it reaches this login."""
        self.state = state

    async def wait(self) -> CallbackResult:
        """The accepted callback; raises ``oauthFailed`` for a denial or a missing code."""
        await self.done.wait()
        if isinstance(self.result, AppError):
            raise self.result
        assert self.result is not None
        return self.result


class _Listener:
    """One bound port and the logins waiting on it.

    Any local program can connect to it, so it holds few connections at once (extras are closed at once), gives each
    a short time to send its request head, and outlives a failed ``accept`` (``EMFILE`` included): idle
    connections can delay a login, never end the listener, its logins or the ones after them.
    """

    def __init__(self, listener: anyio.abc.SocketListener, port: int) -> None:
        self.listener = listener
        self.port = port
        self.waiting: list[Callback] = []
        self.scope = anyio.CancelScope()
        self.closed = anyio.Event()
        self._open = 0
        self._silent: dict[object, anyio.CancelScope] = {}
        """The connections still waiting for their request head, oldest first: the first to give way."""

    async def serve(self) -> None:
        """Accept until cancelled, then close the socket (here, so no accept is left waiting on a closed one)."""
        try:
            with self.scope:
                async with anyio.create_task_group() as connections:
                    await self._accept(connections)
        finally:
            with anyio.CancelScope(shield=True):
                await self.listener.aclose()
            self.closed.set()

    async def _accept(self, connections: anyio.abc.TaskGroup) -> None:
        failing = False
        while True:
            try:
                stream = await self.listener.accept()
            except OSError as exc:  # out of descriptors, an aborted connection: the next accept may work
                if not failing:
                    reason = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
                    log.warning("oauth_callback_accept_failed", port=self.port, error=reason)
                failing = True
                await anyio.sleep(_ACCEPT_PAUSE_S)
                continue
            failing = False
            if self._open >= _MAX_CONNECTIONS:
                if not self._silent:
                    await stream.aclose()  # every one is being answered: they end at once
                    continue
                self._silent.pop(next(iter(self._silent))).cancel()  # the oldest silent one gives way
            self._open += 1
            connections.start_soon(self._handle, stream)

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        try:
            async with stream:
                await self._answer(stream)
        finally:
            self._open -= 1

    async def _answer(self, stream: anyio.abc.SocketStream) -> None:
        key = object()
        head = None
        try:
            with anyio.CancelScope() as silent:
                self._silent[key] = silent
                with anyio.fail_after(_READ_TIMEOUT_S):
                    head = await BufferedByteReceiveStream(stream).receive_until(b"\r\n\r\n", _MAX_HEAD_BYTES)
        except (TimeoutError, anyio.IncompleteRead, anyio.DelimiterNotFound, anyio.EndOfStream, *_GONE):
            return
        finally:
            self._silent.pop(key, None)
        if head is None:
            return  # it gave way to a newer connection
        status, title = self._route(head)
        body = _PAGE.format(title=title).encode()
        response = (
            f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n"
        ).encode() + body
        try:
            with anyio.fail_after(_READ_TIMEOUT_S):
                await stream.send(response)
        except (TimeoutError, *_GONE):
            return

    def _route(self, head: bytes) -> tuple[str, str]:
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = request_line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return "400 Bad Request", "Bad request"
        method, target = parts[0], urlsplit(parts[1])
        if target.path != CALLBACK_PATH:
            return "404 Not Found", "Not found"
        if method != "GET":
            return "405 Method Not Allowed", "Method not allowed"
        query = parse_qs(target.query, keep_blank_values=True)
        callback = self._waiting_for(_one(query, "state"))
        if callback is None:
            return "400 Bad Request", "This sign-in is unknown or has ended"
        if callback.done.is_set():
            return "410 Gone", "This sign-in link was already used"
        callback.result = _parse(query)
        callback.done.set()
        if isinstance(callback.result, AppError):
            return "400 Bad Request", "Sign-in failed"
        return "200 OK", "Sign-in complete"

    def _waiting_for(self, state: str | None) -> Callback | None:
        """The login whose state this is, each compared in constant time (a state is a bearer secret)."""
        if state is None:
            return None
        found = None
        for callback in self.waiting:
            if callback.state is not None and secrets.compare_digest(callback.state, state):
                found = callback
        return found


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0] if values and len(values) == 1 else None


def _parse(query: dict[str, list[str]]) -> CallbackResult | AppError:
    state = _one(query, "state") or ""
    error = _one(query, "error")
    if error is not None:
        # Only a short token-like error code is echoed (never the free-form description).
        code = error if error.replace("_", "").isalnum() and len(error) <= 64 else "invalid"
        if code == "access_denied":
            return AppError("oauthFailed", "the authorization was denied", step="callback", oauthError=code)
        return AppError("oauthFailed", f"the authorization server returned {code}", step="callback", oauthError=code)
    grant = _one(query, "code")
    if not grant:
        return AppError("oauthFailed", "the authorization callback carried no code", step="callback")
    return CallbackResult(code=grant, state=state, iss=_one(query, "iss"))


class CallbackHub:
    """The listeners of the daemon's running logins; ``async with hub.attach(port) as callback`` inside a task
    group's task. A configured port is bound once and shared by the logins on it; without one, each login gets
    a free port of its own. A listener closes with its last login."""

    def __init__(self, task_group: anyio.abc.TaskGroup) -> None:
        self._tg = task_group
        self._shared: dict[int, _Listener] = {}
        self._binding = anyio.Lock()

    @asynccontextmanager
    async def attach(self, port: int | None) -> AsyncIterator[Callback]:
        """A callback on ``port`` (None: a free one); ``callbackPortInUse`` when another program holds it."""
        async with self._binding:  # two logins on one port: the second must find the first one's listener
            listener = self._shared.get(port) if port is not None else None
            if listener is None:
                listener = await self._bind(port)
        callback = Callback(f"http://127.0.0.1:{listener.port}{CALLBACK_PATH}")
        listener.waiting.append(callback)
        try:
            yield callback
        finally:
            listener.waiting.remove(callback)
            if not listener.waiting:
                if self._shared.get(listener.port) is listener:
                    del self._shared[listener.port]
                listener.scope.cancel()
                with anyio.CancelScope(shield=True):
                    await listener.closed.wait()

    async def _bind(self, port: int | None) -> _Listener:
        try:
            bound = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port or 0)
        except OSError as exc:
            if port is not None and exc.errno in (errno.EADDRINUSE, errno.EACCES):
                raise AppError(
                    "callbackPortInUse",
                    f"the login's callback port {port} (oauth.callbackPort) is in use by another program",
                    port=port,
                ) from None
            raise AppError("oauthFailed", "the login's loopback callback could not listen", step="callback") from None
        (socket_listener,) = bound.listeners  # one address: 127.0.0.1
        assert isinstance(socket_listener, anyio.abc.SocketListener)
        listener = _Listener(socket_listener, socket_listener.extra(anyio.abc.SocketAttribute.local_port))
        if port is not None:
            self._shared[port] = listener
        self._tg.start_soon(listener.serve)
        return listener
