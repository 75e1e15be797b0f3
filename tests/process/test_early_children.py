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
from typing import Any

import pytest

from testing.daemon_client import running_daemon
from testing.fixtures import fixture_config

pytestmark = pytest.mark.daemon

STARTUP = "mcpServer/startupStatus/updated"
CLIENT = {"clientInfo": {"name": "tests", "version": "0"}}
MARK = 'echo $$ >> "$0"; exec "$@"'


def _marked(marker: Path, **extra: Any) -> dict[str, Any]:
    server = fixture_config()
    return {"command": "/bin/sh", "args": ["-c", MARK, str(marker), server["command"], *server["args"]], **extra}


def _store(data_dir: Path, configs: dict[str, dict[str, Any]]) -> None:
    with running_daemon(data_dir) as first:
        first.initialize()
        for name, config in configs.items():
            first.request("mcpServer/create", {"name": name, "config": config})


def test_a_stdio_child_runs_before_the_sdk_has_loaded_and_its_session_attaches_to_it(
    data_dir: Path, tmp_path: Path
) -> None:
    markers = {name: tmp_path / f"{name}.pids" for name in ("a", "b")}
    _store(data_dir, {name: _marked(marker) for name, marker in markers.items()})
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
    _store(data_dir, {"quiet": _marked(marker)})
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
    _store(data_dir, {"edited": _marked(old)})
    with running_daemon(data_dir) as daemon:
        daemon.request("initialize", CLIENT)
        daemon.notify("initialized")
        daemon.request("mcpServer/update", {"name": "edited", "config": _marked(new)})
        daemon.wait_notification(STARTUP, lambda p: p["status"] == "ready", timeout=90)
        assert len(new.read_text().split()) == 1
        early = old.read_text().split() if old.exists() else []
        assert len(early) <= 1
        for pid in early:  # the early child (if it started before the edit) is gone once autostart is over
            _wait_gone(int(pid))


def _wait_gone(pid: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} is still running")
