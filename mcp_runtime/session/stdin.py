"""The session's write stream for a stdio server: each message goes straight into the child's stdin buffer.

A writer task or a byte stream would cost every request a task switch or a forced checkpoint; here ``send``
writes into the child's asyncio ``StreamWriter`` at once, waits only while the pipe is backed up, and joins the
messages written in one loop pass into one write.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import anyio

from mcp_runtime.session.closing import ClosesAtOnce

JOIN_BYTES = 1 << 18
"""Messages of one loop pass up to this size are joined into one system call."""

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

    from mcp_runtime.session.upstream_guard import UpstreamGuard


class StdinStream(ClosesAtOnce):
    """``WriteStream[SessionMessage]`` over a child's stdin; ``exited`` is set when the pipe breaks."""

    def __init__(self, writer: asyncio.StreamWriter, guard: UpstreamGuard, exited: anyio.Event) -> None:
        self._writer = writer
        self._guard = guard
        self._exited = exited
        self._pending: list[bytes] | None = None
        """Messages written after the first in this loop pass (None: no flush is scheduled)."""
        self._pending_bytes = 0
        self._closed = False

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._writer.is_closing():
            self._exited.set()
            raise anyio.BrokenResourceError
        while self._backed_up():  # wait before encoding: a waiting request holds no second copy of itself
            self._flush()
            await self._drain()
        self._guard.sent(item.message)
        data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
        if self._pending is not None:
            self._pending.append(data)
            self._pending_bytes += len(data)
            return
        self._pending, self._pending_bytes = [], 0
        asyncio.get_running_loop().call_soon(self._flush)
        self._writer.write(data)

    def _backed_up(self) -> bool:
        transport = self._writer.transport
        return self._pending_bytes + transport.get_write_buffer_size() > transport.get_write_buffer_limits()[1]

    def _flush(self) -> None:
        pending, size = self._pending, self._pending_bytes
        self._pending, self._pending_bytes = None, 0
        if not pending or self._writer.is_closing():
            return
        if size <= JOIN_BYTES:
            self._writer.write(b"".join(pending))
            return
        for data in pending:  # large requests go as they are: joining them would hold a second copy
            self._writer.write(data)

    async def _drain(self) -> None:
        try:
            await self._writer.drain()
        except (ConnectionError, RuntimeError) as exc:
            self._exited.set()
            raise anyio.BrokenResourceError from exc

    def close(self) -> None:
        """No more sends (the transport closes the pipe itself, after the session)."""
        self._closed = True
