"""Line framing with a size cap: an over-long line is discarded while reading, never held whole."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

TOO_LARGE = object()
"""Yielded in place of a line that exceeded the cap (its bytes were dropped as they arrived)."""


async def read_lines(receive: Callable[[], Awaitable[bytes]], max_line: int) -> AsyncIterator[bytes | object]:
    """Yield each ``\\n``-terminated line (without the newline), or ``TOO_LARGE``; stop at EOF, where an
    unfinished line is dropped (its sender closed before finishing it) and its buffer released at once."""
    buffer = bytearray()
    discarding = False
    while True:
        chunk = await receive()
        if not chunk:
            del buffer
            return
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if not discarding:
                    buffer += chunk[start:]
                    if len(buffer) > max_line:
                        buffer.clear()
                        discarding = True
                break
            if discarding:
                discarding = False
                yield TOO_LARGE
            else:
                buffer += chunk[start:end]
                if len(buffer) > max_line:
                    yield TOO_LARGE
                else:
                    yield bytes(buffer)
                buffer.clear()
            start = end + 1
