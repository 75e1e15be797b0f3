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
import anyio.lowlevel

from mcp_runtime.limits import MAX_MESSAGE_BYTES
from mcp_runtime.session.closing import ClosesAtOnce

STDOUT_CHUNK = 1 << 16
"""Bytes read from the pipe at once; asyncio's reader also stops reading the pipe past twice this unread."""
_MAX_ANNOUNCEMENT_BYTES = 512
"""A ``list_changed`` notification is a few dozen bytes; a longer line is never taken for one."""

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
        self._announcements: set[bytes] = set()
        """The ``list_changed`` lines among ``_lines``."""
        self._ended = False
        self._closed = False

    async def receive(self) -> SessionMessage | Exception:
        if self._lines:
            # A burst (a storm of notifications in one chunk) is handed over one line per loop pass, so the
            # session's reader never holds the loop for a whole chunk's worth of messages.
            await anyio.lowlevel.checkpoint()
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
        line = self._lines.popleft()
        self._announcements.discard(line)
        return self._guard.received(line)

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
            for line in lines:
                if (stripped := line.strip()) and not self._repeated(stripped):
                    self._lines.append(stripped)
        if len(self._partial) > MAX_MESSAGE_BYTES:
            self._overflowed()

    def _repeated(self, line: bytes) -> bool:
        """A ``list_changed`` line the same as one still waiting here says nothing more: the refresh the first one
        starts comes after both. A storm is read, never queued message by message."""
        if len(line) > _MAX_ANNOUNCEMENT_BYTES or b"list_changed" not in line or b'"id"' in line:
            return False  # an answer or a request (they carry an id) is never merged, even with its twin
        if line in self._announcements:
            return True
        self._announcements.add(line)
        return False

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
        self._announcements.clear()
