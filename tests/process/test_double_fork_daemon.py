"""What a stdio server double-forks away (a session of its own, its parent gone at once, as a daemonizing tool does)
is stopped with the server (SPEC §5, §10): each server is a child subreaper, so the grandchild stays its descendant
and is found when the server is stopped, and by the child watcher when the daemon is killed, with or without the
parent-death signal."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from testing.daemon_client import running_daemon
from testing.process_tree import start_family, started, stat, wait_gone

pytestmark = [
    pytest.mark.daemon,
    pytest.mark.skipif(sys.platform != "linux", reason="child subreapers and /proc are Linux's"),
]


@pytest.mark.parametrize("end", ["server stopped", "daemon killed", "daemon killed, watcher only"])
def test_a_double_forked_grandchild_goes_with_its_server(data_dir: Path, tmp_path: Path, end: str) -> None:
    env = {"MCP_APP_SERVER_PARENT_DEATH_SIGNAL": "off"} if end.endswith("watcher only") else None
    with running_daemon(data_dir, env=env) as daemon:
        daemon.initialize()
        _, grandchild = start_family(daemon, tmp_path, "away", daemonize=True)
        born = {grandchild: started(grandchild)}
        try:
            if end == "server stopped":
                daemon.request("mcpServer/stop", {"name": "away"}, timeout=30)
            else:
                daemon.process.kill()
                daemon.process.wait()
            assert wait_gone(born) == [], f"a double-forked grandchild outlived its server ({end})"
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(grandchild, signal.SIGKILL)


def test_what_a_stopped_server_left_is_reaped_not_kept_as_a_zombie(data_dir: Path, tmp_path: Path) -> None:
    """The daemonizing fork's first child (a session leader the server never reaped) and the grandchild die with
    the server and come back to the daemon as zombies: reaped, so no stop leaves an entry in the process table."""
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        for round_ in range(3):
            _, grandchild = start_family(daemon, tmp_path, f"away{round_}", daemonize=True)
            daemon.request("mcpServer/stop", {"name": f"away{round_}"}, timeout=30)
            assert wait_gone([grandchild]) == []
        deadline = time.monotonic() + 15
        while (zombies := _zombies(daemon.process.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert zombies == [], "a stop left zombies of the daemon behind"


def _zombies(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := stat(int(entry.name))) and int(fields[1]) == parent and fields[0] == "Z":
            found.append(int(entry.name))
    return found
