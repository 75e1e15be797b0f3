"""The session's read stream for a stdio server: the session's own read loop reads the child's stdout.

A reader task handing lines over a memory stream would cost every reply a task switch; here ``receive`` reads
the pipe itself, each line still judged in order by the ``UpstreamGuard``. A line longer than a read is kept as
the pieces the pipe gave and joined once at its end (one copy, whatever its size); a line over
``MAX_SERVER_MESSAGE_BYTES`` is not kept: only its first and last bytes are, so that the request it answers fails
typed with its size and the connection goes on with the next line.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING, Self

import anyio
import anyio.lowlevel

from mcp_runtime.limits import MAX_SERVER_MESSAGE_BYTES
from mcp_runtime.session.closing import ClosesAtOnce

STDOUT_CHUNK = 1 << 16
"""Bytes read from the pipe at once while no long line is under way; asyncio's reader also stops reading the pipe
past twice this unread."""
LONG_READ = 1 << 20
"""Bytes read at once while a line longer than a chunk is being assembled (a large result costs fewer passes)."""
_MAX_ANNOUNCEMENT_BYTES = 512
"""A ``list_changed`` notification is a few dozen bytes; a longer line is never taken for one."""
EDGE_BYTES = 4096
"""What is kept of each end of an oversized line: enough to find the id of the request it answers."""
_BLANK = b" \t\r\n"

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

    from mcp_runtime.session.upstream_guard import UpstreamGuard


class _Oversized:
    """An oversized line being skipped: its size so far, its head and its last bytes."""

    def __init__(self, head: bytes) -> None:
        self.size = len(head)
        self.head = head[:EDGE_BYTES]
        self.tail = head[-EDGE_BYTES:]

    def feed(self, piece: bytes | memoryview) -> None:
        self.size += len(piece)
        self.tail = (self.tail + bytes(piece[-EDGE_BYTES:]))[-EDGE_BYTES:]


class StdoutStream(ClosesAtOnce):
    """``ReadStream[SessionMessage | Exception]`` over a child's stdout; ``exited`` is set at its end."""

    def __init__(
        self,
        stdout: asyncio.StreamReader,
        guard: UpstreamGuard,
        exited: anyio.Event,
        limit: int = MAX_SERVER_MESSAGE_BYTES,
    ) -> None:
        self._stdout = stdout
        self._guard = guard
        self._exited = exited
        self._limit = limit
        self._pieces: list[memoryview] = []
        """The bytes after the last newline read so far, as read."""
        self._pending = 0
        """Their total size."""
        self._oversized: _Oversized | None = None
        self._lines: deque[bytes | _Oversized] = deque()
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
                chunk = await self._stdout.read(LONG_READ if self._pieces or self._oversized else STDOUT_CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                self._end()
                continue
            self._take(chunk)
        line = self._lines.popleft()
        if isinstance(line, _Oversized):
            return self._guard.oversized(line.head, line.tail, line.size, self._limit)
        if len(line) <= _MAX_ANNOUNCEMENT_BYTES:
            self._announcements.discard(line)
        return self._guard.received(line)

    def _take(self, chunk: bytes) -> None:
        view = memoryview(chunk)
        start = 0
        while (newline := chunk.find(b"\n", start)) != -1:
            self._line_end(view[start:newline], chunk, start, newline)
            start = newline + 1
        if start < len(chunk):
            self._grow(view[start:])

    def _grow(self, piece: memoryview) -> None:
        """Bytes of a line not ended yet: kept, or only counted once the line is past the limit."""
        if self._oversized is not None:
            self._oversized.feed(piece)
        elif self._pending + len(piece) > self._limit:
            self._oversized = _Oversized(bytes(self._pieces[0][:EDGE_BYTES]) if self._pieces else b"")
            self._oversized.size = self._pending
            self._oversized.feed(piece)
            self._pieces, self._pending = [], 0
        else:
            self._pieces.append(piece)
            self._pending += len(piece)

    def _line_end(self, piece: memoryview, chunk: bytes, start: int, end: int) -> None:
        if self._pieces or self._oversized is not None:
            self._grow(piece)
            if self._oversized is not None:
                self._lines.append(self._oversized)
                self._oversized = None
                return
            line = b"".join(self._pieces)
            self._pieces, self._pending = [], 0
        else:
            if end - start > self._limit:
                oversized = _Oversized(b"")
                oversized.feed(piece)
                self._lines.append(oversized)
                return
            line = chunk[start:end]
        if not line or line[0] in _BLANK or line[-1] in _BLANK:
            line = line.strip()  # rare: a CRLF or padded line (a blank line becomes empty and is skipped)
            if not line:
                return
        if not self._repeated(line):
            self._lines.append(line)

    def _repeated(self, line: bytes) -> bool:
        """A ``list_changed`` line the same as one still waiting here says nothing more: the refresh the first one
        starts comes after both. A storm is read, never queued message by message."""
        if len(line) > _MAX_ANNOUNCEMENT_BYTES or b"list_changed" not in line or b'"id"' in line:
            return False  # an answer or a request (they carry an id) is never merged, even with its twin
        if line in self._announcements:
            return True
        self._announcements.add(line)
        return False

    def _end(self) -> None:
        self._ended = True
        self._pieces, self._pending = [], 0
        self._oversized = None
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
        self._pieces, self._pending = [], 0
