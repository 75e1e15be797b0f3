"""The session's read stream for a stdio server: the session's own read loop reads the child's stdout.

A reader task handing lines over a memory stream would cost every reply a task switch; here ``receive`` reads
the pipe itself, each line still judged in order by the ``UpstreamGuard``, and a line over
``MAX_MESSAGE_BYTES`` ends the stream as a dead server's closed pipe does.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Self

import anyio

from mcp_runtime.limits import MAX_MESSAGE_BYTES
from mcp_runtime.session.closing import ClosesAtOnce

STDOUT_CHUNK = 1 << 16
"""Bytes read from the pipe at once; asyncio's reader also stops reading the pipe past twice this unread."""

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

    from mcp_runtime.session.upstream_guard import UpstreamGuard


class StdoutStream(ClosesAtOnce):
    """``ReadStream[SessionMessage | Exception]`` over a child's stdout; ``exited`` is set at its end.

    ``overflow`` is called once when the child writes a line over ``MAX_MESSAGE_BYTES``: the stream then ends
    after the lines before it.
    """

    def __init__(
        self, stdout: asyncio.StreamReader, guard: UpstreamGuard, exited: anyio.Event, overflow: Callable[[], None]
    ) -> None:
        self._stdout = stdout
        self._guard = guard
        self._exited = exited
        self._overflow = overflow
        self._partial = bytearray()
        """The bytes after the last newline read so far."""
        self._lines: deque[bytes] = deque()
        self._ended = False
        self._closed = False

    async def receive(self) -> SessionMessage | Exception:
        while not self._lines:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._ended:
                raise anyio.EndOfStream
            try:
                chunk = await self._stdout.read(STDOUT_CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                self._end()
                continue
            self._take(chunk)
        return self._guard.received(self._lines.popleft())

    def _take(self, chunk: bytes) -> None:
        if b"\n" not in chunk:
            self._partial += chunk
        else:
            if self._partial:
                self._partial += chunk
                chunk = bytes(self._partial)
                self._partial.clear()
            *lines, rest = chunk.split(b"\n")
            if len(lines[0]) > MAX_MESSAGE_BYTES:  # only the first line can hold bytes of earlier chunks
                self._overflowed()
                return
            self._partial += rest
            self._lines.extend(stripped for line in lines if (stripped := line.strip()))
        if len(self._partial) > MAX_MESSAGE_BYTES:
            self._overflowed()

    def _overflowed(self) -> None:
        self._partial.clear()
        self._overflow()
        self._end()

    def _end(self) -> None:
        self._ended = True
        self._exited.set()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def close(self) -> None:
        """No more reads (the transport closes the pipe itself, after the session)."""
        self._closed = True
        self._lines.clear()
