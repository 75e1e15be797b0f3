"""Building the MCP SDK transport for a server config (SPEC §5): env policy, stderr capture, reaping, HTTP policy.

stdio is our own small transport rather than the SDK's ``stdio_client``: the SDK's does not kill the process
group when the server exits by itself within its grace period (a grandchild survives), exposes no pid, and has no
bound on a stdout line. The wire format (one JSON-RPC message per line) and the shutdown sequence (close stdin,
grace, SIGTERM the group, SIGKILL) are the same.

HTTP uses the SDK's ``streamable_http_client`` over an ``httpx2.AsyncClient`` whose transport refuses redirects,
oversized bodies and (without an auth provider) 401s by answering the request with a synthetic JSON-RPC error
carrying ``data.reason``, so the one request fails with a typed reason and the connection survives.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import json
import os
import signal
import ssl
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from mcp_runtime._stdin import StdinStream, stdin_writer
from mcp_runtime._stdout import STDOUT_CHUNK, StdoutStream
from mcp_runtime._upstream_guard import REASON_MARKER, UpstreamGuard
from mcp_runtime.config import REDACTED, policy
from mcp_runtime.limits import MAX_MESSAGE_BYTES
from protocol.config import HttpServerConfig, McpServerConfig, StdioServerConfig
from protocol.jsonrpc import REASON_CODES, AppError

if TYPE_CHECKING:
    import httpx2
    from anyio.abc import Process
    from mcp.client._transport import TransportStreams

log = structlog.get_logger("mcp_runtime.transport")

STDERR_TAIL_BYTES = 8 * 1024
STOP_GRACE_S = 2.0
"""Time a server gets to exit after its stdin closes before its group is signalled."""
TERM_GRACE_S = 2.0
"""Time between SIGTERM and SIGKILL of the group."""
MIN_REDACTED_LEN = 4
"""Shorter values are not redacted: a 1-3 character value would garble the tail and is no secret."""
HTTP_CONNECT_TIMEOUT_S = 30.0

_LIVE_GROUPS: set[int] = set()


def kill_live_groups() -> None:
    """Last resort at shutdown and interpreter exit: no child group outlives the daemon, whatever path it exits by."""
    for pgid in list(_LIVE_GROUPS):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


atexit.register(kill_live_groups)


def _parent_death_setup() -> dict[str, Any]:
    """Popen options that make a child die with the daemon (Linux ``PR_SET_PDEATHSIG``), even on SIGKILL."""
    if sys.platform != "linux":
        return {}  # elsewhere the atexit group kill is the fallback
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    daemon_pid = os.getpid()

    def die_with_parent() -> None:  # runs in the child between fork and exec
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != daemon_pid:
            os._exit(1)  # the daemon died before the signal was armed

    return {"preexec_fn": die_with_parent}


class StderrTail:
    """The last few KiB a child wrote to stderr, with secret values replaced by ``***`` when read.

    Redaction happens on read over a buffer kept ``max(len(secret))`` longer than the tail, so a secret
    split by a chunk boundary is still matched and a secret cut by the truncation is dropped, not shown.
    """

    def __init__(self, secrets: list[str], limit: int = STDERR_TAIL_BYTES) -> None:
        self._secrets = sorted({s for s in secrets if len(s) >= MIN_REDACTED_LEN}, key=len, reverse=True)
        self._slack = max((len(s.encode()) for s in self._secrets), default=0)
        self._limit = limit
        self._buffer = bytearray()
        self._truncated = False

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        excess = len(self._buffer) - (self._limit + self._slack)
        if excess > 0:
            del self._buffer[:excess]
            self._truncated = True

    def text(self) -> str | None:
        if not self._buffer:
            return None
        text = self._buffer.decode("utf-8", errors="replace")
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        if self._truncated:
            text = text[self._slack :]
        return text[-self._limit :]


def secret_values(config: McpServerConfig, env: Mapping[str, str]) -> list[str]:
    """Every value the config injects from its own ``env`` or the daemon environment."""
    if isinstance(config, StdioServerConfig):
        return [*config.env.values(), *(env[name] for name in config.env_vars if name in env)]
    names = [*config.env_headers.values(), *([config.bearer_token_env_var] if config.bearer_token_env_var else [])]
    return [env[name] for name in names if name in env]


def child_environment(config: StdioServerConfig, env: Mapping[str, str]) -> dict[str, str]:
    """SDK safe default set + the named daemon variables that are set + ``env``; never the whole environment."""
    from mcp.client.stdio import get_default_environment

    result = get_default_environment()
    result.update({name: env[name] for name in config.env_vars if name in env})
    result.update(config.env)
    return result


async def _stdout_pipe() -> tuple[asyncio.StreamReader, asyncio.ReadTransport, int]:
    """A pipe for the child's stdout read straight by an asyncio stream: a subprocess transport's own pipe
    hands every chunk over through one more loop pass (``call_soon`` of ``pipe_data_received``) before a
    reader sees it. Returns the reader, its transport (closing it closes our end) and the child's end."""
    loop = asyncio.get_running_loop()
    ours, child_end = os.pipe()
    reader = asyncio.StreamReader(limit=STDOUT_CHUNK)
    try:
        pipe = os.fdopen(ours, "rb", buffering=0)
    except BaseException:
        os.close(ours)
        os.close(child_end)
        raise
    try:
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    except BaseException:
        pipe.close()
        os.close(child_end)
        raise
    return reader, transport, child_end


class StdioTransport:
    """One child process speaking newline-delimited JSON-RPC on stdin/stdout, in its own process group.

    ``exited`` is set when the session's read loop finds the child's stdout ended (it exited or closed it):
    the connection's supervisor waits on it to notice a dead server without a request in flight. Every stdout
    line goes through ``guard`` before the SDK sees it, so a malformed reply fails its call at once instead of
    being dropped.
    """

    def __init__(self, config: StdioServerConfig, env: Mapping[str, str], tail: StderrTail) -> None:
        self._config = config
        self._env = env
        self.tail = tail
        self.exited = anyio.Event()
        self.fault: AppError | None = None
        self.returncode: int | None = None
        self.pid: int | None = None
        self.grace_s = STOP_GRACE_S
        self.graceful: Callable[[], bool] = lambda: True
        """False for a server that never finished starting: it is killed without the stdin-close grace."""
        self._stderr_done = anyio.Event()
        self.guard = UpstreamGuard()
        """Turns a malformed reply into an error for its call, and counts the lines it skips."""
        self._cm: AbstractAsyncContextManager[TransportStreams] | None = None

    async def __aenter__(self) -> TransportStreams:
        self._cm = self._open()
        return await self._cm.__aenter__()

    async def __aexit__(self, *exc: Any) -> bool | None:
        assert self._cm is not None
        return await self._cm.__aexit__(*exc)

    async def _spawn(self, stdout: int) -> Process:
        import subprocess

        from anyio._core._eventloop import get_async_backend

        config = self._config
        argv = policy().stdio_argv(config)
        try:
            # The backend's open_process passes Popen options through; the public one has no preexec_fn.
            return await get_async_backend().open_process(
                argv,
                stdin=subprocess.PIPE,
                stdout=stdout,
                stderr=subprocess.PIPE,
                env=child_environment(config, self._env),
                cwd=config.cwd,
                start_new_session=True,
                **_parent_death_setup(),
            )
        except FileNotFoundError as exc:
            if config.cwd is not None and not os.path.isdir(config.cwd):
                raise AppError("startupFailed", f"working directory not found: {config.cwd}") from exc
            raise AppError("startupFailed", f"command not found: {argv[0]}") from exc
        except PermissionError as exc:
            raise AppError("startupFailed", f"command is not executable: {argv[0]}") from exc
        except OSError as exc:
            raise AppError("startupFailed", f"could not start {argv[0]}: {exc.strerror or exc}") from exc

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[TransportStreams]:
        stdout, stdout_pipe, child_end = await _stdout_pipe()
        try:
            process = await self._spawn(child_end)
        except BaseException:
            stdout_pipe.close()
            raise
        finally:
            os.close(child_end)
        self.pid = process.pid
        _LIVE_GROUPS.add(process.pid)
        read_stream = StdoutStream(stdout, self.guard, self.exited, self._overflowed)
        write_stream = StdinStream(stdin_writer(process), self.guard, self.exited)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read_stderr, process)
                try:
                    yield read_stream, write_stream
                finally:
                    with anyio.CancelScope(shield=True):
                        write_stream.close()
                        read_stream.close()
                        await self._stop(process)
                        # The stderr reader sees EOF once the group is dead; give it a moment to drain.
                        with anyio.move_on_after(0.5):
                            await self._stderr_done.wait()
                    tg.cancel_scope.cancel()
        finally:
            stdout_pipe.close()
            _LIVE_GROUPS.discard(process.pid)
            self.returncode = process.returncode
            self.exited.set()

    def _overflowed(self) -> None:
        self.fault = AppError(
            "responseTooLarge",
            f"the server wrote a stdout message over {MAX_MESSAGE_BYTES} bytes",
            limit=MAX_MESSAGE_BYTES,
        )

    async def _read_stderr(self, process: Process) -> None:
        assert process.stderr is not None
        try:
            async for chunk in process.stderr:
                self.tail.feed(chunk)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass
        finally:
            self._stderr_done.set()

    async def _stop(self, process: Process) -> None:
        """Close stdin, wait the grace, then SIGTERM/SIGKILL the whole group (grandchildren included)."""
        from mcp.os.posix.utilities import terminate_posix_process_tree

        assert process.stdin is not None
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
        with anyio.move_on_after(self.grace_s if self.graceful() else 0):
            await process.wait()
        # Always signal the group: a server that exited by itself may have left children behind.
        await terminate_posix_process_tree(process, TERM_GRACE_S)
        with anyio.move_on_after(TERM_GRACE_S):
            await process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await stream.aclose()
        transport = getattr(getattr(process, "_process", None), "_transport", None)
        close = getattr(transport, "close", None)
        if callable(close):
            with contextlib.suppress(PermissionError):
                close()


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
async def _http(
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


def build_transport(
    config: McpServerConfig, env: Mapping[str, str], tail: StderrTail, *, auth: httpx2.Auth | None = None
) -> StdioTransport | AbstractAsyncContextManager[TransportStreams]:
    """The SDK transport for ``config``; env-referenced values are resolved here (``missingEnvVar`` early)."""
    policy().check_transport(config)
    if isinstance(config, StdioServerConfig):
        return StdioTransport(config, env, tail)
    return _http(config, resolve_headers(config, env), auth)
