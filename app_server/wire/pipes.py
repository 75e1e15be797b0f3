"""The process's own stdio descriptors, handled with the standard library alone: what the event loop's transport
and start-up's reader (which runs before the loop, and before asyncio is imported) both need.
"""

from __future__ import annotations

import os
import select
import stat
import sys
from typing import Any

if sys.platform == "win32":
    fcntl: Any = None  # no fcntl: widen finds no F_SETPIPE_SZ and leaves the pipe as it is
else:
    import fcntl

STDIN = 0
STDOUT = 1
PIPE_BYTES = 1 << 20


def watchable(fd: int) -> bool:
    """A pipe, socket or terminal, which the event loop may watch (a terminal must be: a read blocked in a
    worker thread would hold the process at exit). A file or ``/dev/null`` is read and written plainly:
    asyncio refuses one with an error, but uvloop's libuv aborts the process."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


def write_all(fd: int, data: bytes) -> None:
    """Every byte, to a file or a terminal; a terminal shares its file (and non-blocking mode) with stdin, so a full
    one is waited for (a person's terminal, paused or slow)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [])


def widen(fd: int) -> None:
    """A large answer (a status list of 16 x 128 tools is ~750 KB) leaves in one write instead of a dozen
    64 KiB rounds with the reader; best effort (Linux pipes only, capped by ``fs.pipe-max-size``)."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_size is None:
        return
    try:
        with open("/proc/sys/fs/pipe-max-size") as limit:
            size = min(PIPE_BYTES, int(limit.read()))
        fcntl.fcntl(fd, set_size, size)
    except (OSError, ValueError):
        pass


def writable_now(fd: int) -> bool:
    """Whether a write to ``fd`` would not block now (False too when ``fd`` cannot be waited on)."""
    try:
        return bool(select.select([], [fd], [], 0)[1])
    except (OSError, ValueError):
        return False
