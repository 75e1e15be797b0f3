"""The file-descriptor limit (SPEC §5 Limits): a macOS GUI app starts its sidecar with a soft limit of 256, which a
few dozen threads' stdio servers (three pipes each) and their sockets use up.

At start the daemon raises its soft ``RLIMIT_NOFILE`` to the hard limit; its stdio servers get the soft limit it
was started with back (between fork and exec), as Go and systemd do, so a server that closes every descriptor up
to its limit, or keeps a table that size, pays for the limit it expects, not the daemon's.
"""

from __future__ import annotations

import errno
import sys

from protocol.jsonrpc import AppError

MACOS_OPEN_MAX = 10240
"""macOS refuses an unlimited soft limit for descriptors; its kernel's ``OPEN_MAX`` is what it takes."""
SHORTAGE = frozenset({errno.EMFILE, errno.ENFILE})

_inherited: int | None = None
"""The soft limit the daemon was started with, when it raised it."""


def raise_descriptor_limit() -> tuple[int, int] | None:
    """Raise the soft limit as far as the hard one allows; (before, after), or None where nothing was raised."""
    global _inherited
    if sys.platform == "win32":
        return None
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard
    if sys.platform == "darwin" and (hard == resource.RLIM_INFINITY or hard > MACOS_OPEN_MAX):
        target = MACOS_OPEN_MAX
    if soft == resource.RLIM_INFINITY or (target != resource.RLIM_INFINITY and target <= soft):
        return None
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        return None
    _inherited = soft
    return soft, target


def restore_for_child() -> None:
    """In a child between fork and exec: the soft limit the daemon was started with."""
    if _inherited is not None and sys.platform != "win32":
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (_inherited, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def is_shortage(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) says the process or the system ran out of descriptors."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in SHORTAGE:
            return True
        current = current.__cause__ or current.__context__
    return False


def too_many_open_files() -> AppError:
    """A start that failed for want of file descriptors (the daemon's, or the system's)."""
    return AppError(
        "startupFailed",
        "too many open files: the daemon is out of file descriptors; stop servers or close threads",
        detail="tooManyOpenFiles",
    )
