"""Output a client has not taken, kept on disk past what its connection keeps in memory (SPEC §1: a client that
stops reading costs the daemon bounded memory whatever the results' sizes, and no answer is ever dropped).

Everything written to a connection while its spool holds anything goes through the spool, so the order of the
connection's output never changes. When the file cannot take more (a full disk, or ``SPOOL_CAP``), what is left
waits in memory until the client reads: no answer is lost, and new requests are refused meanwhile. The file is
unnamed (``O_TMPFILE``, or unlinked at once where that does not exist), in the data dir, 0600; it is closed (its
space freed) whenever everything in it has been sent, and when the connection closes.
"""

from __future__ import annotations

import errno
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO

import anyio

from app_server.process.logs import get_logger

log = get_logger("app_server.spool")

READ_CHUNK = 1 << 20
"""Bytes read back from the file per write to the client."""
SPOOL_CAP = 1 << 30
"""Unsent bytes one connection may keep on disk; past it (or when the disk is full) its output waits in memory, in
order, and new requests are ``overloaded`` until the client has read (the connection's backlog counts both)."""


class Spool:
    """A FIFO of bytes on its way to one client: appended in memory, written to the file by one task, read back
    and handed to ``put`` by another whenever ``room`` says the connection can take more."""

    def __init__(self, folder: Path, put: Callable[[bytes], None], room: Callable[[], Awaitable[None]]) -> None:
        self._folder = folder
        self._put = put
        self._room = room
        self._file: IO[bytes] | None = None
        self._queue: deque[bytes] = deque()
        self._queued = 0
        self._moving = 0
        """Bytes being written to the file right now (they follow the file's bytes and precede the queue's)."""
        self._start = 0
        self._end = 0
        self._failed = False
        self._appended = anyio.Event()
        self._spilled = anyio.Event()
        self._emptied = anyio.Event()
        self._emptied.set()
        self.lost = False
        self._spilled_bytes = 0
        self._most_queued = 0
        self._limiter = anyio.CapacityLimiter(1)
        """The spool's own worker (file writes never wait behind other work's threads, an archive's fsync)."""

    def __len__(self) -> int:
        """Bytes not yet handed to the connection."""
        return self._queued + self._moving + self._end - self._start

    def append(self, data: bytes) -> None:
        self._queue.append(data)
        self._queued += len(data)
        self._most_queued = max(self._most_queued, self._queued)
        if self._emptied.is_set():
            self._emptied = anyio.Event()
        self._appended.set()
        self._spilled.set()  # the feeder looks again (it sends from memory once the file has failed)

    async def emptied(self) -> None:
        """Until everything appended has been handed to the connection."""
        while len(self):
            await self._emptied.wait()

    async def run(self) -> None:
        """Move bytes to the file and from it to the connection, for as long as the connection lives; returns
        only if the file cannot be read back (``lost``): the connection must then close, since its answers
        could no longer arrive in order."""
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._spill)
            try:
                await self._feed()
            except OSError as exc:
                log.error("spool_unreadable", folder=str(self._folder), cause=exc.strerror or str(exc))
                self.lost = True
                self.close()
            tasks.cancel_scope.cancel()

    async def _spill(self) -> None:
        while True:
            if not self._queue or self._failed:
                await self._appended.wait()
                self._appended = anyio.Event()
                continue
            data = self._queue.popleft()
            self._queued -= len(data)
            self._moving = len(data)
            with anyio.CancelScope(shield=True):  # the file and the offsets stay in step whatever is cancelled
                try:
                    await anyio.to_thread.run_sync(self._write, data, limiter=self._limiter)
                except OSError as exc:
                    self._failed = True  # the rest stays in memory, in order: answers are never dropped
                    self._queue.appendleft(data)
                    self._queued += len(data)
                    log.warning("spool_failed", folder=str(self._folder), cause=exc.strerror or str(exc))
                else:
                    self._end += len(data)
                    self._spilled_bytes += len(data)
                finally:
                    self._moving = 0
                    del data
            self._spilled.set()

    def _write(self, data: bytes) -> None:
        """In a worker thread: the file is made on first use, and written at its end (never past ``SPOOL_CAP``)."""
        if self._end - self._start + len(data) > SPOOL_CAP:
            raise OSError(errno.EFBIG, "the connection's spool is at its cap")
        if self._file is None:
            import tempfile

            self._file = tempfile.TemporaryFile(dir=self._folder, buffering=0)  # unnamed, 0600
        self._file.seek(self._end)  # reads and writes take turns on the spool's one worker
        view = memoryview(data)
        while view:
            view = view[self._file.write(view) :]

    async def _feed(self) -> None:
        while True:
            if self._start < self._end:
                await self._room()
                chunk = await self._read()
                self._put(chunk)
            elif self._moving:
                await self._spilled.wait()
                self._spilled = anyio.Event()
            elif self._queue and self._failed:
                await self._room()
                data = self._queue.popleft()
                self._queued -= len(data)
                self._put(data)
            elif self._queue:
                await self._spilled.wait()
                self._spilled = anyio.Event()
            elif self._file is not None:
                await self._close_file()
            else:
                self._failed = False
                self._emptied.set()
                await self._spilled.wait()
                self._spilled = anyio.Event()

    async def _read(self) -> bytes:
        assert self._file is not None
        size = min(READ_CHUNK, self._end - self._start)
        with anyio.CancelScope(shield=True):
            chunk = await anyio.to_thread.run_sync(self._read_at, self._file, size, limiter=self._limiter)
            self._start += len(chunk)
        return chunk

    def _read_at(self, file: IO[bytes], size: int) -> bytes:
        """In the spool's worker: ``size`` bytes from where the unsent part of the file starts."""
        file.seek(self._start)
        return file.read(size)

    async def _close_file(self) -> None:
        """Everything has been sent: the file goes (with its disk space), offsets start again."""
        log.debug("spool_sent", bytes=self._spilled_bytes, most_in_memory=self._most_queued)
        self._start = self._end = self._spilled_bytes = self._most_queued = 0
        if self._file is not None:
            spool, self._file = self._file, None
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(spool.close, limiter=self._limiter)

    def close(self) -> None:
        """The connection is closing: what it has not taken is discarded (it stopped reading)."""
        self._queue.clear()
        self._queued = self._start = self._end = 0
        if self._file is not None:
            self._file.close()
            self._file = None
        self._emptied.set()
