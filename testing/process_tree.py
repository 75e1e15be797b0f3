"""The process tree as Linux's ``/proc`` shows it, for the tests that prove no child outlives the daemon, and the
stdio fixture server that leaves a grandchild behind it."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from testing.daemon_client import JsonLinesClient
from testing.fixtures import script


def stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, ppid, pgrp, …), or None when gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None


def started(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), or None when gone: a number alone may go to another process."""
    fields = stat(pid)
    return int(fields[19]) if fields else None


def gone(pid: int, born: int | None = None) -> bool:
    """Dead, or a zombie waiting for its new parent to reap it; with ``born`` (its start time), also when the
    number now belongs to a process started since."""
    fields = stat(pid)
    return fields is None or fields[0] in ("Z", "X") or (born is not None and int(fields[19]) != born)


def wait_gone(pids: Iterable[int] | Mapping[int, int | None], timeout: float = 15.0) -> list[int]:
    """The pids still alive after ``timeout`` (polled: the kill comes from another process). A mapping gives each
    pid's start time as taken while it surely lived; otherwise it is taken now, so a number handed to a new
    process meanwhile never counts as alive."""
    born = dict(pids) if isinstance(pids, Mapping) else {pid: started(pid) for pid in pids}
    deadline = time.monotonic() + timeout
    while (alive := [pid for pid, time_ in born.items() if not gone(pid, time_)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def children(pid: int) -> dict[int, str]:
    """The live children of ``pid`` and their command lines."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := stat(int(entry.name))) and int(fields[1]) == pid:
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except (FileNotFoundError, ProcessLookupError):
                continue
            found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace")
    return found


def watcher_of(daemon: int) -> int:
    """The daemon's one child watcher process."""
    watchers = [pid for pid, cmdline in children(daemon).items() if "watch-children" in cmdline]
    assert len(watchers) == 1, children(daemon)
    return watchers[0]


def start_family(
    daemon: JsonLinesClient,
    tmp_path: Path,
    name: str,
    *,
    setsid: bool = False,
    daemonize: bool = False,
    env: dict[str, str] | None = None,
) -> tuple[int, int]:
    """A stdio server that leaves a grandchild (in its group, or in a session of its own with ``setsid``, or
    double-forked away with ``daemonize``); returns (the grandchild's parent pid, grandchild pid)."""
    pid_file = tmp_path / f"{name}.pid"
    argv = script("spawn_grandchild.py")
    env = {"FIXTURE_PID_FILE": str(pid_file), **({"FIXTURE_GRANDCHILD_SETSID": "1"} if setsid else {}),
           **({"FIXTURE_GRANDCHILD_DAEMONIZE": "1"} if daemonize else {}), **(env or {})}
    config = {"command": argv[0], "args": argv[1:], "env": env}
    daemon.request("mcpServer/create", {"name": name, "config": config})
    daemon.request("mcpServer/start", {"name": name}, timeout=60)
    grandchild = int(pid_file.read_text())
    fields = stat(grandchild)
    assert fields is not None
    return int(fields[1]), grandchild
