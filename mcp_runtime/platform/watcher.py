"""No stdio child outlives the daemon (SPEC §10), even one killed with SIGKILL where there is no parent-death signal.

A small watcher process, started from the daemon's own executable with the first stdio child, reads a pipe whose
write end only the daemon holds (close-on-exec: no child inherits it). The daemon writes ``+<pgid>`` when a child's
process group starts and ``-<pgid>`` once it is reaped. However the daemon ends, the kernel closes the write end;
the watcher reads end of file and SIGKILLs every group still registered. It runs in a session of its own, so a
signal to the daemon's process group does not take it along, and holds none of the daemon's stdio.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence


class ChildGroups:
    """The process groups of the live stdio children, and the watcher process told about each of them."""

    def __init__(self) -> None:
        self._live: set[int] = set()
        self._command: tuple[str, ...] | None = None
        self._pipe: int | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def use_watcher(self, command: Sequence[str]) -> None:
        """Start ``command`` (the daemon's own executable in its watcher mode) with the first child group."""
        self._command = tuple(command)

    def add(self, pgid: int) -> None:
        self._live.add(pgid)
        self._tell(b"+%d\n" % pgid)

    def discard(self, pgid: int) -> None:
        if pgid in self._live:
            self._live.discard(pgid)
            self._tell(b"-%d\n" % pgid)

    def kill_all(self) -> bool:
        """SIGKILL every live group (shutdown's last resort); True when one was still there to kill."""
        killed = False
        if sys.platform == "win32":
            return killed
        for pgid in list(self._live):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
                killed = True
        return killed

    def _tell(self, line: bytes) -> None:
        if self._pipe is None and self._command is not None:
            self._pipe = self._start(self._command)
            self._command = None  # started once: a watcher that could not start is not tried again
        if self._pipe is None:
            return
        try:
            os.write(self._pipe, line)  # a few bytes to a pipe the watcher drains: never blocks in practice
        except OSError as exc:
            self._warn("the child watcher stopped listening", exc)
            os.close(self._pipe)
            self._pipe = None

    def _start(self, command: Sequence[str]) -> int | None:
        if sys.platform == "win32":  # no process groups to kill (the daemon does not serve there)
            return None
        read_end, write_end = os.pipe()
        try:
            self._process = subprocess.Popen(
                command,
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            os.close(write_end)
            self._warn("the child watcher could not start", exc)
            return None
        finally:
            os.close(read_end)
        os.set_blocking(write_end, False)
        return write_end

    @staticmethod
    def _warn(event: str, exc: OSError) -> None:
        import structlog

        structlog.get_logger("mcp_runtime.watcher").warning(event, error=exc.strerror or type(exc).__name__)


CHILD_GROUPS = ChildGroups()
atexit.register(CHILD_GROUPS.kill_all)


def use_child_watcher(command: Sequence[str]) -> None:
    """Set by the command line: how the daemon starts itself in its watcher mode (:func:`watch_children`)."""
    CHILD_GROUPS.use_watcher(command)


def kill_live_groups() -> bool:
    """Last resort at shutdown and interpreter exit: no child group outlives the daemon, whatever path it exits by.
    True when a group was still alive to kill."""
    return CHILD_GROUPS.kill_all()


def watch_children(source: int = 0) -> int:
    """The watcher process: registrations from ``source`` until end of file, then SIGKILL every group left."""
    groups: set[int] = set()
    pending = b""
    while True:
        try:
            chunk = os.read(source, 4096)
        except OSError:
            chunk = b""
        if not chunk:
            break
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            sign, number = line[:1], line[1:]
            if sign in (b"+", b"-") and number.isdigit() and int(number) > 1:
                (groups.add if sign == b"+" else groups.discard)(int(number))
    if sys.platform != "win32":
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
    return 0
