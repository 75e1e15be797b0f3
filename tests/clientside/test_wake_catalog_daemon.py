"""A thread server that wakes with a changed catalog (SPEC §4, §16): ``mcp:tools_updated`` reaches the host before
the woken call's answer, and the call is checked against the new catalog."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import Daemon
from testing.fixtures import FIXTURES
from testing.ordering import until_response
from testing.threads import START_TIMEOUT, call, start_call, start_thread

pytestmark = pytest.mark.daemon


def rows(daemon: Daemon, thread_id: str) -> list[dict[str, Any]]:
    return daemon.request("mcpServerStatus/list", {"threadId": thread_id, "serverName": "cc"})["data"]  # type: ignore[no-any-return]


@pytest.mark.skipif(sys.platform != "linux", reason="stdio servers stopped by process group")
def test_a_woken_server_with_a_new_catalog_is_announced_before_the_call_answers(daemon: Daemon, tmp_path: Path) -> None:
    config = {
        "command": sys.executable,
        "args": [str(FIXTURES / "changing_catalog.py"), str(tmp_path / "starts")],
        "idleTimeoutMs": 1000,
    }
    thread_id = start_thread(daemon, mcpServers={"cc": config})
    assert call(daemon, thread_id, "cc", "echo", {"text": "hi"})["content"][0]["text"] == "hi"
    deadline = time.monotonic() + START_TIMEOUT
    while rows(daemon, thread_id)[0]["runtimeStatus"] != "idle":
        assert time.monotonic() < deadline, "the server never went to sleep"
        time.sleep(0.05)
    assert not daemon.notifications("mcp:tools_updated")
    call_id = start_call(daemon, thread_id, "cc", "echo", {"text": "hi"})
    announced = lambda m: m.get("method") == "mcp:tools_updated" and m["params"]["threadId"] == thread_id  # noqa: E731
    before, response = until_response(daemon, call_id, announced, START_TIMEOUT)
    assert [m["params"] for m in before] == [{"server": "cc", "threadId": thread_id}]
    assert response["error"]["data"]["reason"] == "invalidArguments"  # loud is now required
    assert call(daemon, thread_id, "cc", "shout", {"text": "hi"})["content"][0]["text"] == "HI"
