"""Byte transports a client connection runs over: the process's stdio pipes, or an accepted socket."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Protocol

import anyio
from anyio.abc import ByteStream

CHUNK = 1 << 16


class ByteTransport(Protocol):
    async def receive(self) -> bytes:
        """The next chunk, or ``b""`` at end of input."""

    async def send(self, data: bytes) -> None: ...

    async def aclose(self) -> None: ...


class StdioTransport:
    """stdin/stdout as non-blocking asyncio pipes (a thread fallback when they are not pipes)."""

    def __init__(self, reader: asyncio.StreamReader | None, writer: asyncio.StreamWriter | None) -> None:
        self._reader = reader
        self._writer = writer
        self._stdin = sys.stdin.buffer
        self._stdout = sys.stdout.buffer

    @classmethod
    async def open(cls) -> StdioTransport:
        loop = asyncio.get_running_loop()
        reader: asyncio.StreamReader | None = asyncio.StreamReader(limit=CHUNK)
        writer: asyncio.StreamWriter | None = None
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
        except (ValueError, OSError):
            reader = None
        try:
            transport, protocol = await loop.connect_write_pipe(
                lambda: asyncio.streams.FlowControlMixin(loop), sys.stdout.buffer
            )
            writer = asyncio.StreamWriter(transport, protocol, None, loop)
        except (ValueError, OSError):
            writer = None
        return cls(reader, writer)

    async def receive(self) -> bytes:
        if self._reader is not None:
            return await self._reader.read(CHUNK)
        return await anyio.to_thread.run_sync(os.read, self._stdin.fileno(), CHUNK, abandon_on_cancel=True)

    async def send(self, data: bytes) -> None:
        if self._writer is not None:
            self._writer.write(data)
            await self._writer.drain()
        else:
            await anyio.to_thread.run_sync(self._write_blocking, data)

    def _write_blocking(self, data: bytes) -> None:
        self._stdout.write(data)
        self._stdout.flush()

    async def aclose(self) -> None:
        if self._writer is not None:
            self._writer.close()


class StreamTransport:
    """An anyio byte stream (an accepted Unix socket connection)."""

    def __init__(self, stream: ByteStream) -> None:
        self._stream = stream

    async def receive(self) -> bytes:
        try:
            return await self._stream.receive(CHUNK)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return b""

    async def send(self, data: bytes) -> None:
        await self._stream.send(data)

    async def aclose(self) -> None:
        await self._stream.aclose()
