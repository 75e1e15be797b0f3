"""A sleeping server whose wake fails once is not dead for its thread (SPEC §4): the failure is typed, and once
its cause is gone a later call starts it again (after a short, growing pause), as for a lost session."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from testing.daemon_client import Daemon, DaemonError
from testing.fixtures import script
from testing.threads import call, start_thread

pytestmark = [
    pytest.mark.daemon,
    pytest.mark.skipif(sys.platform == "win32", reason="a shell script as the server's command"),
]


def _idle(daemon: Daemon, thread_id: str) -> bool:
    params = {"serverName": "fx", "threadId": thread_id}
    return bool(daemon.request("mcpServerStatus/list", params)["data"][0]["runtimeStatus"] == "idle")


def test_a_failed_wake_is_tried_again_once_its_cause_is_gone(daemon: Daemon, tmp_path: Path) -> None:
    command = tmp_path / "server.sh"
    argv = script("fixture_server.py")
    command.write_text("#!/bin/sh\nexec " + " ".join(argv) + ' "$@"\n')
    command.chmod(0o700)
    config = {"command": str(command), "idleTimeoutMs": 1000}
    daemon.request("mcpServer/create", {"name": "fx", "config": config})
    thread_id = start_thread(daemon, servers=["fx"])
    assert call(daemon, thread_id, "fx", "echo", {"text": "one"})["content"][0]["text"] == "one"
    deadline = time.monotonic() + 30
    while not _idle(daemon, thread_id):
        assert time.monotonic() < deadline, "the server never went to sleep"
        time.sleep(0.05)

    hidden = tmp_path / "server.sh.away"
    os.rename(command, hidden)  # the wake fails: the command is gone for a while
    with pytest.raises(DaemonError) as err:
        call(daemon, thread_id, "fx", "echo", {"text": "two"})
    assert (err.value.code, err.value.reason) == (-32014, "startupFailed")

    os.rename(hidden, command)  # the cause is gone: a later call wakes it after the pause
    deadline = time.monotonic() + 15
    while True:
        try:
            answer = call(daemon, thread_id, "fx", "echo", {"text": "three"})
            break
        except DaemonError as failed:
            assert failed.reason == "startupFailed", failed
            assert time.monotonic() < deadline, "the server was never started again after its failed wake"
            time.sleep(0.1)
    assert answer["content"][0]["text"] == "three"
