"""stdio servers: our own small transport rather than the SDK's ``stdio_client``.

The SDK's leaves a grandchild alive when the server exits by itself, exposes no pid and does not bound a
stdout line; this one starts each child in its own process group, registered with the child watcher (and with a
parent-death signal on Linux), and always reaps the whole group, with the SDK's wire format and shutdown sequence.
How the child is started (program, argv, environment, sandbox) is ``launch``'s.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from mcp_runtime.platform import children, descriptors
from mcp_runtime.platform.shell_path import LOGIN_PATH
from mcp_runtime.platform.watcher import CHILD_GROUPS
from mcp_runtime.session import launch
from mcp_runtime.session.stdin import StdinStream
from mcp_runtime.session.stdout import STDOUT_CHUNK, StdoutStream
from mcp_runtime.session.upstream_guard import UpstreamGuard
from protocol.config import StdioServerConfig
from protocol.jsonrpc import AppError

if TYPE_CHECKING:
    from mcp_runtime._sdk_compat import TransportStreams
    from mcp_runtime.config.policy import ConfigPolicy
    from mcp_runtime.session.kept_launch import Started
    from mcp_runtime.session.transport import StderrTail

STOP_GRACE_S = 2.0
"""Time a server gets to exit after its stdin closes before its group is signalled."""
TERM_GRACE_S = 2.0
"""Time between SIGTERM and SIGKILL of the group."""
STDERR_CHUNK = 1 << 16
"""Bytes of stderr read at once (only a bounded tail of it is kept)."""
_Pipe = tuple[asyncio.StreamReader, asyncio.ReadTransport, int]


async def _read_pipe(limit: int) -> _Pipe:
    """A pipe from the child read straight by an asyncio stream: a subprocess transport's own pipe hands every
    chunk over through one more loop pass (``call_soon`` of ``pipe_data_received``) before a reader sees it,
    and a pipe of our own is ours to close, whoever else still holds its other end. Returns the reader, its
    transport (closing it closes our end) and the child's end."""
    ours, child_end = os.pipe()
    try:
        reader, transport = await _reading(ours, limit)
    except BaseException:
        os.close(child_end)
        raise
    return reader, transport, child_end


async def _reading(ours: int, limit: int) -> tuple[asyncio.StreamReader, asyncio.ReadTransport]:
    """Our end of a pipe from the child, read by an asyncio stream (closing the transport closes the end)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    try:
        pipe = os.fdopen(ours, "rb", buffering=0)
    except BaseException:
        os.close(ours)
        raise
    try:
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    except BaseException:
        pipe.close()
        raise
    return reader, transport


async def _typed(pipe: Awaitable[_Pipe]) -> _Pipe:
    """A pipe for the child, or the typed start failure (``tooManyOpenFiles`` when descriptors ran out)."""
    try:
        return await pipe
    except OSError as exc:
        if descriptors.is_shortage(exc):
            raise descriptors.too_many_open_files() from exc
        raise AppError("startupFailed", f"could not make a pipe for the server: {exc.strerror or exc}") from exc


async def refresh_login_path(policy: ConfigPolicy) -> None:
    """This launch's read of the login shell's ``PATH`` under ``--path-from-shell auto`` (once, shared by every
    start): start-up makes it when enabled stdio servers are autostarted, once they no longer need the machine."""
    if policy.path_from_shell:
        await LOGIN_PATH.fresh(os.environ)


async def _plan(config: StdioServerConfig, env: Mapping[str, str], policy: ConfigPolicy) -> launch.Launch:
    """The launch of a server: the login shell's folders as known now (kept or read this launch); a command found
    in none of them waits for this launch's read, and only then is it ``commandNotFound``. Behind a sandbox the
    daemon cannot look the command up, so only a first launch ever (nothing kept) waits."""
    sandbox = policy.stdio_sandbox
    if not policy.path_from_shell:
        return launch.plan(config, env, sandbox, ())
    known = LOGIN_PATH.known(os.environ)
    if known is None and sandbox:
        return launch.plan(config, env, sandbox, await LOGIN_PATH.fresh(os.environ))
    try:
        return launch.plan(config, env, sandbox, known or ())
    except AppError as exc:
        if exc.details.get("detail") != "commandNotFound":
            raise
    return launch.plan(config, env, sandbox, await LOGIN_PATH.fresh(os.environ))


_Child = tuple[
    children.Leader, asyncio.StreamReader, asyncio.StreamReader, asyncio.ReadTransport, asyncio.ReadTransport
]
"""A started child: the process, its stdout and stderr readers, and our ends of those pipes."""


class StdioTransport:
    """One child process speaking newline-delimited JSON-RPC on stdin/stdout, in its own process group.

    ``exited`` is set when the session's read loop finds the child's stdout ended (it exited or closed it):
    the connection's supervisor waits on it to notice a dead server without a request in flight. Every stdout
    line goes through ``guard`` before the SDK sees it, so a malformed reply fails its call at once instead of
    being dropped.
    """

    def __init__(
        self, config: StdioServerConfig, env: Mapping[str, str], tail: StderrTail, policy: ConfigPolicy
    ) -> None:
        self._config = config
        self._env = env
        self._policy = policy
        self.tail = tail
        self.exited = anyio.Event()
        self.returncode: int | None = None
        self.pid: int | None = None
        self.grace_s = STOP_GRACE_S
        self.graceful: Callable[[], bool] = lambda: True
        """False for a server that never finished starting: it is killed without the stdin-close grace."""
        self._stderr_done = anyio.Event()
        self.guard = UpstreamGuard()
        """Turns a malformed reply into an error for its call, and counts the lines it skips."""
        self._cm: AbstractAsyncContextManager[TransportStreams] | None = None
        self._child: _Child | None = None

    async def __aenter__(self) -> TransportStreams:
        self._cm = self._open()
        return await self._cm.__aenter__()

    async def __aexit__(self, *exc: Any) -> bool | None:
        assert self._cm is not None
        return await self._cm.__aexit__(*exc)

    async def _spawn(self, stdout: int, stderr: int) -> children.Leader:
        """Start the child in its own session (so its group can be signalled whole), dying with the daemon."""
        config = self._config
        if sys.platform == "win32":
            raise AppError("unsupported", "stdio servers need POSIX process groups, which Windows does not have")
        started = await _plan(config, self._env, self._policy)
        try:
            return await children.spawn(
                *started.argv,
                executable=started.executable,
                stdout=stdout,
                stderr=stderr,
                env=started.env,
                cwd=config.cwd,
                **children.child_setup(),
            )
        except FileNotFoundError as exc:
            if config.cwd is not None and not os.path.isdir(config.cwd):
                raise AppError("startupFailed", f"working directory not found: {config.cwd}") from exc
            if os.path.isfile(os.path.join(config.cwd or "", started.executable)):
                raise AppError("startupFailed", f"the interpreter of {started.executable} was not found") from exc
            raise AppError(
                "startupFailed",
                f"command not found: {started.executable}",
                detail="commandNotFound",
                command=started.executable,
                searched=[],
            ) from exc
        except PermissionError as exc:
            raise AppError("startupFailed", f"command is not executable: {started.executable}") from exc
        except OSError as exc:
            if descriptors.is_shortage(exc):
                raise descriptors.too_many_open_files() from exc
            raise AppError("startupFailed", f"could not start {started.executable}: {exc.strerror or exc}") from exc

    async def start(self) -> None:
        """Start the child with stdout and stderr on pipes of our own: the spawn half of the transport, which needs
        no SDK (``early`` runs it before the SDK is loaded); entering the transport attaches the session to it."""
        if self._child is not None:
            return
        stdout, stdout_pipe, stdout_end = await _typed(_read_pipe(STDOUT_CHUNK))
        try:
            stderr, stderr_pipe, stderr_end = await _typed(_read_pipe(STDERR_CHUNK))
        except BaseException:
            stdout_pipe.close()
            os.close(stdout_end)
            raise
        try:
            process = await self._spawn(stdout_end, stderr_end)
        except BaseException:
            stdout_pipe.close()
            stderr_pipe.close()
            raise
        finally:
            os.close(stdout_end)
            os.close(stderr_end)
        self.pid = process.pid
        CHILD_GROUPS.add(process.pid)
        self._child = (process, stdout, stderr, stdout_pipe, stderr_pipe)

    async def adopt(self, started: Started) -> None:
        """Hold a child started before the loop ran (``kept_launch``), instead of starting one: its pipes and its
        process given to the loop, as ``start`` leaves them."""
        pipes: list[asyncio.ReadTransport] = []
        try:
            stdout, stdout_pipe = await _reading(started.hand_over("stdout"), STDOUT_CHUNK)
            pipes.append(stdout_pipe)
            stderr, stderr_pipe = await _reading(started.hand_over("stderr"), STDERR_CHUNK)
            pipes.append(stderr_pipe)
            process = await children.hold(started.popen, started.hand_over("stdin"))
        except BaseException:
            for pipe in pipes:
                pipe.close()
            started.discard()
            raise
        self.pid = process.pid
        CHILD_GROUPS.add(process.pid)
        self._child = (process, stdout, stderr, stdout_pipe, stderr_pipe)

    async def discard(self) -> None:
        """Stop a child that no session attached to (its group reaped, its pipes closed)."""
        if self._child is None:
            return
        process, _, _, stdout_pipe, stderr_pipe = self._child
        self.graceful = lambda: False  # it never finished starting: no stdin-close grace
        try:
            with anyio.CancelScope(shield=True):
                await self._stop(process)
        finally:
            stdout_pipe.close()
            stderr_pipe.close()
            process.release()
            self.exited.set()

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[TransportStreams]:
        await self.start()
        assert self._child is not None
        process, stdout, stderr, stdout_pipe, stderr_pipe = self._child
        assert process.stdin is not None
        read_stream = StdoutStream(stdout, self.guard, self.exited)
        write_stream = StdinStream(process.stdin, self.guard, self.exited)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read_stderr, stderr)
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
            stderr_pipe.close()
            process.release()
            self.returncode = process.returncode
            self.exited.set()

    async def _read_stderr(self, stderr: asyncio.StreamReader) -> None:
        try:
            while chunk := await stderr.read(STDERR_CHUNK):
                self.tail.feed(chunk)
        except OSError:
            pass
        finally:
            self._stderr_done.set()

    async def _stop(self, process: children.Leader) -> None:
        """Close stdin, wait the grace, then SIGTERM (and SIGCONT, so a frozen process gets it) the whole group and
        the descendants that left it, SIGKILL what is left after the second grace, and only then reap the leader:
        until then its zombie keeps its group's number from any other process."""
        assert process.stdin is not None
        if sys.platform == "win32":
            return  # no stdio servers there: spawning refuses first
        family = children.Family(process.pid)  # while the server lives, what it double-forked is still its child
        try:
            process.stdin.close()
            with anyio.move_on_after(self.grace_s if self.graceful() else 0):
                await process.wait()
            # Always signal the group: a server that exited by itself may have left children behind.
            family.scan(process.pid)
            for number in (signal.SIGTERM, signal.SIGCONT):
                process.signal_group(number)
                family.signal(number)
            with anyio.move_on_after(TERM_GRACE_S):
                while process.group_alive() or family.alive():
                    await anyio.sleep(children.POLL_S)
            process.signal_group(signal.SIGKILL)
            family.signal(signal.SIGKILL)
            with anyio.move_on_after(TERM_GRACE_S):
                await process.wait()
        finally:
            family.close()
            process.release()
