"""No stdio child outlives the daemon (SPEC §10), even one killed with SIGKILL where there is no parent-death signal.

A small watcher process, started from the daemon's own executable before the first stdio child, reads a pipe whose
write end only the daemon holds (close-on-exec: no child inherits it). The daemon writes ``+<pgid>`` when a child's
process group starts and ``-<pgid>`` once it is reaped. However the daemon ends, the kernel closes the write end;
the watcher reads end of file and kills every group still registered. It runs in a session of its own, so a signal
to the daemon's process group does not take it along, and holds none of the daemon's stdio.

A full pipe is back-pressure, never a death: what the watcher has not read yet waits in the daemon, coalesced per
group, and is written when the pipe drains. The watcher's stdout is a second pipe back to the daemon, never written:
its end of file tells the daemon that the watcher died, and a new one is started and told every live group.

On Linux the watcher sweeps each group's whole tree (a grandchild that called ``setsid`` left the group, not its
parent): it stops every process it finds before looking for their children, so that none can exit and hand its
children to init while it looks, then kills them all. To find that tree intact, the daemon starts its children with
SIGSTOP, not SIGKILL, as their parent-death signal while a watcher is running (:func:`parent_death_signal`).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop

RESTART_PAUSE_S = 1.0
"""A watcher that died within this time of its start is started again only after it: no busy restart loop."""
_LINE_BATCH = 4096
"""Writes of at most ``PIPE_BUF`` bytes to a pipe are atomic: a line is never cut by a full pipe."""


class ChildGroups:
    """The process groups of the live stdio children, and the watcher process told about each of them."""

    def __init__(self) -> None:
        self._live: set[int] = set()
        self._command: tuple[str, ...] | None = None
        self._pipe: int | None = None
        self._back: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._started_at = 0.0
        self._unsent: dict[int, bytes] = {}
        """What the watcher has not been told yet, one sign per group: a full pipe never drops a registration."""
        self._loop: AbstractEventLoop | None = None
        self._writing = False
        self._once_told: dict[int, list[Callable[[], None]]] = {}
        """What waits for the watcher to hear that a group ended: its leader's reaping (the number given up)."""

    def use_watcher(self, command: Sequence[str]) -> None:
        """Start ``command`` (the daemon's own executable in its watcher mode) before the first child group."""
        self._command = tuple(command)

    def watching(self) -> bool:
        """True when a watcher runs (started now if it was not): the children may rely on it."""
        if self._pipe is None and self._command is not None:
            self._start()
        return self._pipe is not None

    def add(self, pgid: int) -> None:
        self._live.add(pgid)
        self._tell(pgid, b"+")

    def discard(self, pgid: int) -> None:
        if pgid in self._live:
            self._live.discard(pgid)
            self._tell(pgid, b"-")

    def live(self) -> frozenset[int]:
        return frozenset(self._live)

    def watcher_pid(self) -> int | None:
        return self._process.pid if self._process is not None and self._pipe is not None else None

    def once_told(self, pgid: int, then: Callable[[], None]) -> None:
        """Run ``then`` once the watcher knows ``pgid`` ended (at once when it was told, never knew of it, or none
        runs): a number the watcher would still kill at the daemon's death is never given up before."""
        if self._unsent.get(pgid) == b"-" and self._pipe is not None:
            self._once_told.setdefault(pgid, []).append(then)
        else:
            then()

    def _told(self, pgids: Iterable[int]) -> None:
        for pgid in pgids:
            for then in self._once_told.pop(pgid, []):
                then()

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

    def _tell(self, pgid: int, sign: bytes) -> None:
        if not self.watching():
            return
        if self._unsent.get(pgid) == b"+" and sign == b"-":
            del self._unsent[pgid]  # the watcher never heard of this group: nothing to take back
        else:
            self._unsent[pgid] = sign
        self._flush()

    def _flush(self) -> None:
        """Write what the pipe takes now; the rest waits for the pipe to drain (never blocks, never drops)."""
        while self._unsent and self._pipe is not None:
            batch = list(self._unsent.items())[: _LINE_BATCH // 12]
            try:
                os.write(self._pipe, b"".join(b"%s%d\n" % (sign, pgid) for pgid, sign in batch))
            except BlockingIOError:
                self._wait_writable()
                return
            except OSError:  # EPIPE: the watcher is gone; its end-of-file on the back channel restarts it
                self._lost()
                return
            for pgid, sign in batch:
                if self._unsent.get(pgid) == sign:
                    del self._unsent[pgid]
            self._told(pgid for pgid, sign in batch if sign == b"-" and pgid not in self._unsent)
        self._stop_waiting()

    def _wait_writable(self) -> None:
        loop = _running_loop()
        if loop is None or self._writing or self._pipe is None:
            return  # no loop (interpreter exit): the next registration tries again
        loop.add_writer(self._pipe, self._flush)
        self._loop, self._writing = loop, True

    def _stop_waiting(self) -> None:
        if self._writing and self._loop is not None and self._pipe is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_writer(self._pipe)
        self._writing = False

    def _start(self) -> None:
        if sys.platform == "win32" or self._command is None:  # no process groups to kill there
            return
        read_end, write_end = os.pipe()
        back_read, back_write = os.pipe()
        try:
            self._process = subprocess.Popen(
                self._command,
                stdin=read_end,
                stdout=back_write,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            os.close(write_end)
            os.close(back_read)
            self._command = None  # a watcher that cannot start is not tried again
            self._warn("the child watcher could not start", exc)
            return
        finally:
            os.close(read_end)
            os.close(back_write)
        os.set_blocking(write_end, False)
        self._pipe, self._back, self._started_at = write_end, back_read, time.monotonic()
        self._unsent = dict.fromkeys(self._live, b"+")
        self._told(list(self._once_told))  # a new watcher never hears of the groups that ended before it
        loop = _running_loop()
        if loop is not None:
            loop.add_reader(back_read, self._heard_back)

    def _restart(self) -> None:
        if self.watching():
            self._flush()

    def _heard_back(self) -> None:
        """The watcher never writes: its back channel is readable only at end of file, when it died."""
        if self._back is None:
            return
        try:
            if os.read(self._back, 64):
                return
        except BlockingIOError:
            return
        except OSError:
            pass
        self._lost()

    def _lost(self) -> None:
        """The watcher died (its back channel ended, or a write found no reader): start another, told everything."""
        if self._pipe is None:
            return
        self._stop_waiting()
        loop = _running_loop()
        if loop is not None and self._back is not None:
            with contextlib.suppress(Exception):
                loop.remove_reader(self._back)
        for end in (self._pipe, self._back):
            if end is not None:
                with contextlib.suppress(OSError):
                    os.close(end)
        self._pipe = self._back = None
        self._told(list(self._once_told))  # a dead watcher kills nothing: what waited on it may go on
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=1)  # reaped: it is dead, its back channel said so
        self._warn("the child watcher died; starting another", None)
        lived = time.monotonic() - self._started_at
        if loop is not None and lived < RESTART_PAUSE_S:
            loop.call_later(RESTART_PAUSE_S - lived, self._restart)
        else:
            self._restart()

    @staticmethod
    def _warn(event: str, exc: OSError | None) -> None:
        import structlog

        error = None if exc is None else exc.strerror or type(exc).__name__
        structlog.get_logger("mcp_runtime.watcher").warning(event, error=error)


def _running_loop() -> AbstractEventLoop | None:
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


CHILD_GROUPS = ChildGroups()
atexit.register(CHILD_GROUPS.kill_all)


def use_child_watcher(command: Sequence[str]) -> None:
    """Set by the command line: how the daemon starts itself in its watcher mode (:func:`watch_children`)."""
    CHILD_GROUPS.use_watcher(command)


def parent_death_signal() -> int:
    """The signal a child gets from Linux when the daemon dies: SIGSTOP while a watcher runs (it freezes the tree
    for the watcher's sweep, grandchildren that left the group included), else SIGKILL."""
    if sys.platform == "win32":
        return 0  # no such signal, and no stdio server, there
    return int(signal.SIGSTOP if CHILD_GROUPS.watching() else signal.SIGKILL)


def kill_live_groups() -> bool:
    """Last resort at shutdown and interpreter exit: no child group outlives the daemon, whatever path it exits by.
    True when a group was still alive to kill."""
    return CHILD_GROUPS.kill_all()


def watch_children(source: int = 0) -> int:
    """The watcher process: registrations from ``source`` until end of file, then kill every group left."""
    groups: set[int] = set()
    pending = b""
    while True:
        try:
            chunk = os.read(source, 1 << 16)
        except BlockingIOError:
            select.select([source], [], [])
            continue
        except OSError:
            chunk = b""  # a pipe that cannot be read is a daemon that cannot be heard: as its end
        if not chunk:
            break
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            sign, number = line[:1], line[1:]
            if sign in (b"+", b"-") and number.isdigit() and int(number) > 1:
                (groups.add if sign == b"+" else groups.discard)(int(number))
    _kill_groups(groups)
    return 0


def _kill_groups(groups: set[int]) -> None:
    """Stop the groups, then (where ``/proc`` tells parents) every descendant until none is new, then kill all."""
    if sys.platform == "win32":
        return
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGSTOP)
    found: set[int] = set()
    if os.path.isdir("/proc/self"):
        while new := _tree(groups, found) - found:
            for pid in new:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGSTOP)
            found |= new
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    for pid in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _tree(groups: set[int], known: set[int]) -> set[int]:
    """The processes in ``groups`` and the children of those and of ``known``, as ``/proc`` shows them now."""
    parents: dict[int, int] = {}
    members: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        parents[pid] = int(fields[1])
        if int(fields[2]) in groups:
            members.add(pid)
    tree = members | known
    return tree | {pid for pid, parent in parents.items() if parent in tree}
