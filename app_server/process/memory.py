"""The process's memory policy: the collector while start-up loads, and an allocator that gives freed memory back.

What start-up loads (modules, models, the MCP SDK when servers are enabled) lives as long as the process, so a
collection then would walk it all and free nothing: the collector is paused from the first line of the program
until start-up has loaded, then ``gc.freeze()`` puts what was loaded out of every later collection's reach.

Freed memory goes back to the system, so a burst (large results, a client that stopped reading, long unfinished
lines) leaves the daemon's RSS where it was once it is over (SPEC §1). glibc raises its mmap threshold each time a
large block is freed, after which blocks of that size come from the heap and stay with the process once freed. A
fixed threshold keeps every large buffer in its own mapping, which ``free`` returns at once. Elsewhere (macOS,
musl) that is a no-op: those allocators return large blocks on their own.
"""

from __future__ import annotations

import functools
import gc
import sys
from typing import Any

M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameter number."""
MMAP_THRESHOLD = 1 << 20
"""Blocks of this size and more each get their own mapping. Not lower: a mapping is faulted in page by page each
time, and answers a host asks for again and again (a status list of many tools: hundreds of KiB) would pay that on
every call instead of reusing heap blocks."""


def pause_collector() -> None:
    """At the program's start (``app_server.process.startup.launch``)."""
    gc.disable()


def resume_collector() -> None:
    """For a command that does not serve (a subcommand): nothing is loaded to freeze."""
    gc.enable()


def freeze_loaded() -> int:
    """Once start-up has loaded; how many objects are frozen."""
    gc.freeze()
    gc.enable()
    return gc.get_freeze_count()


@functools.cache
def _glibc() -> Any:
    """The C library when it is glibc, else None."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018  (present in glibc only)
    except (OSError, AttributeError):
        return None
    return libc


def return_large_blocks() -> bool:
    """Fix the mmap threshold (once, early); False where the allocator is not glibc."""
    libc = _glibc()
    return libc is not None and libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
