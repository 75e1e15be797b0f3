"""A stdio server's process as the daemon holds it (SPEC §5, §10): signalled only while it is provably still ours.

A process group is signalled by number, and a number is free for reuse once its last holder is reaped: after the
loop's own child watcher had reaped a server, a stop could signal an unrelated process that took the number. Here
the daemon reaps its servers itself, and only at the end of a stop: the leader is watched without being reaped
(``waitid`` with ``WNOWAIT``), so while its group is signalled its zombie still holds the number; the child watcher
is told the group ended before the number is given up. Descendants that left the group are found through ``/proc``
before anything is signalled and held by pidfd (Linux), which never names another process. On Linux each server is a
child subreaper of its own (set between fork and exec), so what it double-forks away stays its descendant, found at
its stop and by the watcher's sweep; the daemon is one too, so what a dead server left comes back to it, is swept at
exit and reaped when it dies.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp_runtime.platform import descriptors
from mcp_runtime.platform.watcher import CHILD_GROUPS, parent_death_signal
from protocol.jsonrpc import AppError

if TYPE_CHECKING:
    import asyncio  # loaded by the loop's side only: a thread starts servers before the loop's imports

PR_SET_CHILD_SUBREAPER = 36
_subreaper: bool | None = None
_HELD: set[int] = set()
"""The servers' processes not reaped yet: never taken for an adopted orphan's zombie."""
POLL_S = 0.02
"""How often a stop looks whether the signalled processes are gone (they are other processes: nothing to await)."""


def become_subreaper() -> bool:
    """Linux: orphans of the daemon's descendants are re-parented to the daemon, not to init; True when set."""
    if sys.platform != "linux":
        return False
    import ctypes

    try:
        return int(ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


PARENT_DEATH_SIGNAL_ENV = "MCP_APP_SERVER_PARENT_DEATH_SIGNAL"
"""A test and diagnostic switch: ``off`` starts children without Linux's parent-death signal, so that the child
watcher alone is what kills them when the daemon dies (as on macOS)."""


def child_setup() -> dict[str, Any]:
    """Popen options run in the child between fork and exec: the descriptor limit the daemon was started with
    (``descriptors``), and a signal when the daemon dies (Linux ``PR_SET_PDEATHSIG``), even on SIGKILL: the child
    watcher's choice of signal (it stops the child for the watcher's sweep, or kills it without a watcher). On Linux
    the server is also a child subreaper (kept across exec): what it double-forks away stays its descendant, so the
    stop of that server and the watcher's sweep find it, not only the daemon's exit."""
    if sys.platform != "linux":
        CHILD_GROUPS.watching()
        return {"preexec_fn": descriptors.restore_for_child}  # the child watcher covers the daemon's death
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    if not dies_with_daemon():
        CHILD_GROUPS.watching()

        def reaping() -> None:
            descriptors.restore_for_child()
            prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

        return {"preexec_fn": reaping}  # the child watcher covers the daemon's death
    daemon_pid = os.getpid()
    death_signal = parent_death_signal()

    def setup() -> None:
        descriptors.restore_for_child()
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        prctl(1, death_signal)  # PR_SET_PDEATHSIG
        if os.getppid() != daemon_pid:
            os._exit(1)  # the daemon died before the signal was armed

    return {"preexec_fn": setup}


def dies_with_daemon() -> bool:
    """Whether a child started now gets Linux's parent-death signal (else only the child watcher covers the
    daemon's death)."""
    return sys.platform == "linux" and os.environ.get(PARENT_DEATH_SIGNAL_ENV) != "off"


class Leader:
    """A server's process (the leader of its own process group), reaped by :meth:`release` only."""

    def __init__(self, popen: subprocess.Popen[bytes], stdin: asyncio.StreamWriter) -> None:
        import asyncio

        self._popen = popen
        self.pid = popen.pid
        self.stdin = stdin
        self.returncode: int | None = None
        self.exited = asyncio.Event()
        """Set when the process ended; it stays a zombie (its number ours) until :meth:`release`."""
        self._reaped = self._released = self._reap_due = False
        _HELD.add(self.pid)
        loop = asyncio.get_running_loop()
        watch = threading.Thread(target=self._watch, args=(loop,), name=f"leader-{self.pid}", daemon=True)
        try:
            watch.start()
        except RuntimeError as exc:  # no thread to be had: the server cannot be watched, so it is not kept
            popen.kill()
            popen.wait()
            _HELD.discard(self.pid)
            raise AppError("startupFailed", "the daemon could not start a thread to watch the server") from exc

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        if sys.platform == "win32":
            return  # no stdio servers there: spawning refuses first
        code = self._wait_exit_keeping_number() if sys.platform == "linux" else self._wait_exit_reaping()
        with contextlib.suppress(RuntimeError):  # the loop closed: nothing is waiting any more
            loop.call_soon_threadsafe(self._ended, code)

    def _wait_exit_keeping_number(self) -> int | None:
        """Linux: wait for the exit and leave the zombie (``WNOWAIT``), so the number is ours until released."""
        if sys.platform != "linux":
            return None
        while True:
            try:
                status = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
            except ChildProcessError:
                return None
            except InterruptedError:
                continue
            if status is None:  # WNOHANG was not given: never, but typeshed allows it
                return None
            return status.si_status if status.si_code == os.CLD_EXITED else -status.si_status

    def _wait_exit_reaping(self) -> int | None:
        """macOS (no ``waitid`` before Python 3.13): the exit reaps the leader at once; its group is signalled only
        while it has not (``_reaped``)."""
        if sys.platform == "win32":
            return None
        try:
            _, raw = os.waitpid(self.pid, 0)
        except ChildProcessError:
            return None
        self._reaped = True
        return os.waitstatus_to_exitcode(raw)

    def _ended(self, code: int | None) -> None:
        if self.returncode is None:
            self.returncode = code if code is not None else 255
        self.exited.set()
        if self._reap_due:
            self._reap()

    async def wait(self) -> int | None:
        await self.exited.wait()
        return self.returncode

    def signal_group(self, number: int) -> None:
        """The whole group, only while the leader is unreaped (its zombie keeps the number from any other group)."""
        if not self._reaped and sys.platform != "win32":
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, number)

    def group_alive(self) -> bool:
        """Whether a process other than the leader's zombie is still in the group (Linux: as ``/proc`` shows it;
        elsewhere the leader's own exit is all that can be seen)."""
        if sys.platform != "linux":
            return not self.exited.is_set()
        return any(state != "Z" for state in _members(self.pid).values())

    def release(self) -> None:
        """Tell the child watcher the group ended, and reap once that line is written: the number is given up
        last (a watcher that cannot read yet keeps the zombie a while, never a stop waiting)."""
        if not self._released:
            self._released = True
            CHILD_GROUPS.discard(self.pid)
            CHILD_GROUPS.once_told(self.pid, self._reap)

    def _reap(self) -> None:
        if not self.exited.is_set():
            self._reap_due = True  # not dead yet even after SIGKILL: reaped when it is
            return
        self._reaped = True
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)  # a zombie: at once
        _HELD.discard(self.pid)
        self._popen.returncode = self.returncode
        reap_adopted()


def start_server(
    *argv: str, executable: str, stdout: int, stderr: int, env: dict[str, str], cwd: str | None, **options: Any
) -> tuple[subprocess.Popen[bytes], int]:
    """Start a server in a session of its own, from any thread (no event loop needed): the process and our end of
    its stdin pipe, for :func:`hold` to give to the loop."""
    global _subreaper
    if _subreaper is None:
        _subreaper = become_subreaper()
        atexit.register(kill_adopted)
    child_end, ours = os.pipe()
    try:
        popen = subprocess.Popen(
            list(argv), executable=executable, stdin=child_end, stdout=stdout, stderr=stderr, env=env, cwd=cwd,
            start_new_session=True, close_fds=True, **options,
        )
    except BaseException:
        os.close(ours)
        raise
    finally:
        os.close(child_end)
    return popen, ours


async def hold(popen: subprocess.Popen[bytes], stdin: int) -> Leader:
    """A started server's process held by the loop: its stdin a pipe writer of the loop, watched, never reaped
    behind our back."""
    import asyncio

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()  # unused: the protocol's flow control and close waiter are what a writer needs
    protocol = asyncio.StreamReaderProtocol(reader)
    try:
        transport, _ = await loop.connect_write_pipe(lambda: protocol, os.fdopen(stdin, "wb", 0))
    except BaseException:
        popen.kill()
        popen.wait()
        raise
    return Leader(popen, asyncio.StreamWriter(transport, protocol, reader, loop))


async def spawn(
    *argv: str, executable: str, stdout: int, stderr: int, env: dict[str, str], cwd: str | None, **options: Any
) -> Leader:
    """Start a server in a session of its own with a stdin pipe of ours, watched but never reaped behind our back."""
    popen, ours = start_server(
        *argv, executable=executable, stdout=stdout, stderr=stderr, env=env, cwd=cwd, **options
    )
    return await hold(popen, ours)


class Family:
    """A server's descendants outside its group, found before anything is signalled and held by pidfd, so a
    signal reaches exactly them, whoever reaps them and whatever takes their numbers later (Linux only)."""

    def __init__(self, leader: int) -> None:
        self._held: dict[int, int] = {}
        self.scan(leader)

    def scan(self, leader: int) -> None:
        """Hold the descendants found now too: a server that exits hands what it double-forked to the daemon,
        so a stop looks once while the server still lives and again after its grace."""
        if sys.platform != "linux" or not hasattr(os, "pidfd_open"):
            return
        for pid, start in _descendants(leader).items():
            if pid in self._held:
                continue
            with contextlib.suppress(OSError):
                descriptor = os.pidfd_open(pid)
                if _start_time(pid) == start:
                    self._held[pid] = descriptor
                else:
                    os.close(descriptor)

    def signal(self, number: int) -> None:
        if sys.platform != "linux":
            return  # nothing is held elsewhere
        for descriptor in self._held.values():
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(descriptor, number)

    def alive(self) -> bool:
        import select

        return any(not select.select([fd], [], [], 0)[0] for fd in self._held.values())

    def close(self) -> None:
        if sys.platform != "linux":
            return  # nothing is held elsewhere
        ours = os.getpid()
        for pid, descriptor in self._held.items():
            if _parent(pid) == ours:  # adopted when its parent died: ours to reap, by the pidfd (never a number)
                with contextlib.suppress(OSError):
                    os.waitid(os.P_PIDFD, descriptor, os.WEXITED | os.WNOHANG)
            os.close(descriptor)
        self._held.clear()


def _stat(pid: int | str) -> list[bytes] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            return file.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None


def _start_time(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[19]) if fields else None


def _parent(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[1]) if fields else None


def _table() -> dict[int, list[bytes]]:
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(entry)) is not None:
            table[int(entry)] = fields
    return table


def _members(pgid: int) -> dict[int, str]:
    """The processes in group ``pgid`` and their states."""
    return {pid: f[0].decode() for pid, f in _table().items() if int(f[2]) == pgid}


def _descendants(leader: int) -> dict[int, int]:
    """Every descendant of ``leader`` outside its group (which ``killpg`` reaches anyway), by start time, the dead
    ones not yet reaped too (a daemonizing fork's first child, which a server seldom reaps: once the server is gone
    it is the daemon's to reap, and a session leader, so only held this way is it known as the server's); with the
    daemon a subreaper, also the orphans it adopted from that session (same session id)."""
    table = _table()
    ours = os.getpid()
    tree = {pid for pid, f in table.items() if int(f[2]) == leader or int(f[3]) == leader} | {leader}
    while new := {pid for pid, f in table.items() if int(f[1]) in tree and pid not in tree and int(f[1]) != ours}:
        tree |= new
    return {pid: int(table[pid][19]) for pid in tree if int(table[pid][2]) != leader and table[pid][0] != b"X"}


def reap_adopted(keep: Sequence[int] = ()) -> None:
    """Reap the zombies of orphans the daemon adopted as subreaper (never a server it still holds, the watcher, or
    a process it started in a session of its own, which its own waiter reaps)."""
    if sys.platform != "linux":
        return
    ours, held = os.getpid(), {*CHILD_GROUPS.live(), *_HELD, *keep}
    for pid, fields in _table().items():
        if int(fields[1]) == ours and fields[0] == b"Z" and pid not in held and int(fields[3]) != pid:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


def kill_adopted() -> None:
    """At exit: every child of the daemon but its watcher that is not in the daemon's own session: the orphans it
    adopted from its servers (double-forked, or left by a server that died), and whatever it started itself."""
    if sys.platform != "linux":
        return
    ours, watcher, session = os.getpid(), CHILD_GROUPS.watcher_pid(), os.getsid(0)
    for pid, fields in _table().items():
        if int(fields[1]) == ours and pid != watcher and int(fields[3]) != session:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
