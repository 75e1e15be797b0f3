"""No stdio child outlives the daemon without the parent-death signal (SPEC §10): the child watcher alone, as on
macOS, tested on Linux with that signal switched off."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from testing.daemon_client import ROOT, JsonLinesClient, running_daemon
from testing.process_tree import start_family, wait_gone, watcher_of

pytestmark = [
    pytest.mark.daemon,
    pytest.mark.skipif(sys.platform != "linux", reason="/proc and process groups as Linux shows them"),
]
WATCHER_ONLY = {"MCP_APP_SERVER_PARENT_DEATH_SIGNAL": "off"}


def test_sigkill_of_the_daemon_leaves_no_child_nor_grandchild(data_dir: Path, tmp_path: Path) -> None:
    with running_daemon(data_dir, env=WATCHER_ONLY) as daemon:
        daemon.initialize()
        family = [*start_family(daemon, tmp_path, "one"), *start_family(daemon, tmp_path, "two")]
        stopped = start_family(daemon, tmp_path, "three")
        daemon.request("mcpServer/stop", {"name": "three"}, timeout=30)
        assert wait_gone(list(stopped)) == []
        watcher = watcher_of(daemon.process.pid)
        daemon.process.kill()
        daemon.process.wait()
        assert wait_gone(family) == [], "a stdio child outlived SIGKILL of the daemon"
        assert wait_gone([watcher]) == [], "the watcher outlived its work"


def test_sigkill_of_the_daemons_whole_process_group(data_dir: Path, tmp_path: Path) -> None:
    """A host that kills the daemon's process group: the watcher has a session of its own and is not in it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "app_server", "--data-dir", str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT), **WATCHER_ONLY},
        cwd=ROOT,
        start_new_session=True,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        client = JsonLinesClient(process.stdout, process.stdin)
        client.initialize()
        family = list(start_family(client, tmp_path, "one"))
        watcher = watcher_of(process.pid)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        assert wait_gone(family) == [], "a stdio child outlived SIGKILL of the daemon's group"
        assert wait_gone([watcher]) == []
        client.assert_conforming()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()


def test_a_daemon_that_exits_takes_its_watcher_along(data_dir: Path, tmp_path: Path) -> None:
    with running_daemon(data_dir, env=WATCHER_ONLY) as daemon:
        daemon.initialize()
        family = list(start_family(daemon, tmp_path, "one"))
        watcher = watcher_of(daemon.process.pid)
        assert daemon.close() == 0
    assert wait_gone([*family, watcher]) == []
