"""Autostart's stdio children start at ``initialized``, before the MCP SDK is loaded (SPEC §8), seen from outside.

Each server's command is ``sh -c 'echo $$ >> MARKER; exec …'``: the marker gets one line per process started (the
shell's pid is the server's after ``exec``) and its modification time says when. The daemon announces a start
(``starting``) only once the SDK and the owners have loaded, so a marker written before that event means the child
ran while the SDK was still loading; one line per server means the session attached to that child instead of
starting another.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from testing.daemon_client import running_daemon, store_servers
from testing.fixtures import marked_fixture_config
from testing.process_tree import wait_gone

pytestmark = pytest.mark.daemon

STARTUP = "mcpServer/startupStatus/updated"
CLIENT = {"clientInfo": {"name": "tests", "version": "0"}}
def test_a_stdio_child_runs_before_the_sdk_has_loaded_and_its_session_attaches_to_it(
    data_dir: Path, tmp_path: Path
) -> None:
    markers = {name: tmp_path / f"{name}.pids" for name in ("a", "b")}
    store_servers(data_dir, {name: marked_fixture_config(marker) for name, marker in markers.items()})
    with running_daemon(data_dir) as daemon:
        daemon.initialize()  # the host asks nothing more: the SDK loads after a quiet quarter second
        daemon.wait_notification(STARTUP, lambda p: p["status"] == "starting", timeout=60)
        announced = time.time()
        for marker in markers.values():
            assert marker.exists(), "no child was running when the first start was announced"
            assert marker.stat().st_mtime < announced
        for name in markers:
            daemon.wait_notification(STARTUP, lambda p, n=name: (p["name"], p["status"]) == (n, "ready"), 90)
        for name, marker in markers.items():
            pids = marker.read_text().split()
            assert len(pids) == 1, f"{name} was started {len(pids)} times"
            os.kill(int(pids[0]), 0)  # the child started early is the one serving
        rows = daemon.request("mcpServerStatus/list", {})["data"]
        assert {row["name"]: row["runtimeStatus"] for row in rows} == {"a": "connected", "b": "connected"}


def test_no_child_and_no_startup_event_before_initialized(data_dir: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pids"
    store_servers(data_dir, {"quiet": marked_fixture_config(marker)})
    with running_daemon(data_dir) as daemon:
        daemon.request("initialize", CLIENT)
        listed = daemon.request("mcpServer/list", {})
        assert [server["name"] for server in listed["data"]] == ["quiet"]
        assert daemon.request("mcpServerStatus/list", {})["data"][0]["runtimeStatus"] == "notStarted"
        assert not marker.exists()
        assert daemon.notifications(STARTUP) == []
        daemon.notify("initialized")
        daemon.wait_notification(STARTUP, lambda p: p["status"] == "ready", timeout=60)
        assert len(marker.read_text().split()) == 1


def test_a_child_whose_config_changed_before_its_session_is_replaced(data_dir: Path, tmp_path: Path) -> None:
    """The host edits a server between ``initialized`` and its session: the early child is not used, and none is
    left running."""
    old, new = tmp_path / "old.pids", tmp_path / "new.pids"
    store_servers(data_dir, {"edited": marked_fixture_config(old)})
    with running_daemon(data_dir) as daemon:
        daemon.request("initialize", CLIENT)
        daemon.notify("initialized")
        daemon.request("mcpServer/update", {"name": "edited", "config": marked_fixture_config(new)})
        daemon.wait_notification(STARTUP, lambda p: p["status"] == "ready", timeout=90)
        assert len(new.read_text().split()) == 1
        early = old.read_text().split() if old.exists() else []
        assert len(early) <= 1
        for pid in early:  # the early child (if it started before the edit) is gone once autostart is over
            assert wait_gone([int(pid)], 30) == []
