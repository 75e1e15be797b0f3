"""The collector policy (``app_server.process.memory``): off while start-up loads, then one freeze and CPython's
default thresholds."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from app_server.process import memory
from testing.daemon_client import running_daemon
from testing.fixtures import fixture_config

pytestmark = pytest.mark.daemon


@pytest.mark.serial  # no other thread may free a frozen object between the two counts (an xdist worker has one)
def test_what_start_up_loaded_is_frozen_and_the_collector_runs_again() -> None:
    thresholds = gc.get_threshold()
    memory.pause_collector()
    try:
        assert not gc.isenabled()
        frozen = memory.freeze_loaded()
        assert gc.isenabled() and frozen == gc.get_freeze_count() > 0
        assert gc.get_threshold() == thresholds
    finally:
        gc.unfreeze()
        gc.enable()


def test_the_daemon_freezes_once_start_up_has_loaded_the_sdk_for_autostart(data_dir: Path) -> None:
    with running_daemon(data_dir) as first:
        first.initialize()
        first.request("mcpServer/create", {"name": "fx", "config": fixture_config()})
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        daemon.wait_notification("mcpServer/startupStatus/updated", lambda p: p["status"] == "ready", timeout=60)
    # read once the daemon has stopped: the early-spawned server can be ready before loading ends, and loading
    # logs how much it froze however it ends
    lines = [json.loads(line) for line in daemon.stderr().splitlines() if line.startswith("{")]
    [loaded] = [line for line in lines if line["event"] == "loaded"]
    assert loaded["frozen_objects"] > 0
