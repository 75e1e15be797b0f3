"""Byte transports a client connection runs over: the process's stdio pipes, or an accepted Unix socket.

Both are asyncio streams so that a response is written synchronously into the transport's buffer
(no queue, no writer task on the hot path); ``drain`` applies backpressure only when it builds up. Writes made
in one pass of the event loop are joined into one system call (pipelined answers finish together). Output the
client has not taken is kept in memory up to ``MEMORY_OUTPUT``; past it, it waits on disk (``app_server.spool``).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import anyio

from app_server.wire import pipes
from app_server.wire.spool import Spool

STDIN = pipes.STDIN
STDOUT = pipes.STDOUT
CHUNK = 1 << 16
JOIN_BYTES = 1 << 18
"""Writes of one loop pass up to this size are joined into one system call; larger ones go as they are."""
MEMORY_OUTPUT = 8 << 20
"""Unsent output a connection keeps in memory; whatever would go past it, and everything after that until the
client has caught up, waits in the connection's spool on disk."""


class Transport:
    """Read chunks, write bytes; ``receive`` returns ``b""`` at end of input."""

    def __init__(
        self,
        reader: asyncio.StreamReader | None,
        writer: asyncio.StreamWriter | None,
        spool_dir: Path,
        prefix: bytes = b"",
        input_ended: bool = False,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._prefix = prefix
        self._input_ended = input_ended
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._spool = Spool(spool_dir, self._put, self._room)

    @classmethod
    async def stdio(cls, spool_dir: Path, prefix: bytes = b"", input_ended: bool = False) -> Transport:
        """stdin/stdout as non-blocking pipes; plain I/O when they are files, and for a terminal's output (uvloop's
        write-pipe transport reads its fd to notice a closed peer, and on a terminal that takes what the person
        types). The process's own stdout (``sys.__stdout__``): ``sys.stdout`` is stderr while the daemon serves
        (``app_server.cli``).

        ``prefix``: stdin bytes read before the event loop ran (``app_server.early``), received first;
        ``input_ended``: stdin reached its end then, so it is not read again."""
        loop = asyncio.get_running_loop()
        stdin, stdout = sys.stdin, sys.__stdout__
        assert stdin is not None and stdout is not None  # a console program (pythonw would have neither)
        reader: asyncio.StreamReader | None = None
        writer: asyncio.StreamWriter | None = None
        if not input_ended and pipes.watchable(STDIN):
            stream = asyncio.StreamReader(limit=CHUNK)
            try:
                await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), stdin.buffer)
                reader = stream
            except (ValueError, OSError):
                pass
        if pipes.watchable(STDOUT) and not os.isatty(STDOUT):
            pipes.widen(STDOUT)
            try:
                transport, protocol = await loop.connect_write_pipe(
                    lambda: asyncio.streams.FlowControlMixin(loop), stdout.buffer
                )
                writer = asyncio.StreamWriter(transport, protocol, None, loop)
            except (ValueError, OSError):
                writer = None
        return cls(reader, writer, spool_dir, prefix, input_ended)

    async def receive(self) -> bytes:
        """The next chunk of input; the answers to the lines already read leave first, in one write."""
        self._write_pending()
        if self._prefix:
            prefix, self._prefix = self._prefix, b""
            return prefix
        if self._input_ended:
            return b""
        if self._reader is not None:
            try:
                return await self._reader.read(CHUNK)
            except ConnectionError:
                return b""
        return await anyio.to_thread.run_sync(os.read, STDIN, CHUNK, abandon_on_cancel=True)

    def write(self, data: bytes, now: bool = False) -> None:
        """Queue ``data`` for the write at the end of this loop pass; ``now``: nothing else is coming, write it
        (with whatever is queued) at once."""
        if self._writer is None:
            pipes.write_all(STDOUT, data)
        elif not self._writer.is_closing():
            if len(self._spool) or self._in_memory() + len(data) > MEMORY_OUTPUT:
                self._write_pending()  # what this pass wrote before goes first
                self._spool.append(data)
                return
            if now and not self._pending:
                self._writer.write(data)  # no flush scheduled: a no-op callback would cost the loop a pass
                return
            if not self._pending:
                asyncio.get_running_loop().call_soon(self._write_pending)
            self._pending.append(data)
            self._pending_bytes += len(data)
            if now:
                self._write_pending()

    def _write_pending(self) -> None:
        """One write for everything queued in this pass of the loop; large answers are handed over as they are
        (joining megabytes would hold a second copy of them for nothing)."""
        pending, size = self._pending, self._pending_bytes
        self._pending, self._pending_bytes = [], 0
        if not pending or self._writer is None or self._writer.is_closing():
            return
        if size <= JOIN_BYTES:
            self._writer.write(b"".join(pending))
            return
        for data in pending:
            self._writer.write(data)

    def _in_memory(self) -> int:
        assert self._writer is not None
        return self._pending_bytes + self._writer.transport.get_write_buffer_size()

    def buffered(self) -> int:
        """Bytes written but not yet taken by the peer, in memory or spooled (0 for blocking files)."""
        if self._writer is None or self._writer.is_closing():
            return 0
        return self._in_memory() + len(self._spool)

    async def run(self) -> None:
        """Spooled output is written to the client as it reads, for the connection's life (its processor's task
        group runs this); a spool that cannot be read back closes the connection."""
        if self._writer is None:
            return
        await self._spool.run()
        if self._spool.lost and not self._writer.is_closing():
            self._writer.transport.abort()

    def _put(self, data: bytes) -> None:
        """The spool hands over the next bytes (the stream's buffer has room)."""
        if self._writer is not None and not self._writer.is_closing():
            self._writer.write(data)

    async def _room(self) -> None:
        """Until the stream's buffer is below its low-water mark (at once when the client is gone)."""
        if self._writer is not None and not self._writer.is_closing():
            try:
                await self._writer.drain()
            except ConnectionError:
                pass

    async def drain(self) -> None:
        """Wait while the write buffer is above its high-water mark.

        Below it nothing is written here: the writes of this loop pass leave together at its end (answers
        that finish in one pass share one system call instead of one each)."""
        if self._writer is None or self._writer.is_closing():
            return
        if self.buffered() <= self._writer.transport.get_write_buffer_limits()[1]:
            return
        await self._drain_now()

    async def _drain_now(self) -> None:
        """The writes of this pass leave; then wait for the spool to be sent and the buffer to drain."""
        assert self._writer is not None
        self._write_pending()
        await self._spool.emptied()
        await self._room()

    async def flush(self) -> None:
        """Wait until every written byte has been taken by the peer (callers bound the wait, and keep ``run``
        going meanwhile)."""
        if self._writer is not None and not self._writer.is_closing():
            self._writer.transport.set_write_buffer_limits(high=0)
            await self._drain_now()

    async def aclose(self) -> None:
        """Close; whatever the peer has not taken by now is discarded (it stopped reading)."""
        self._spool.close()
        if self._writer is not None and not self._writer.is_closing():
            self._writer.transport.abort()
