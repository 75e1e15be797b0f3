"""Fresh catalogs (SPEC §16): a list result within its ``ttlMs`` is not read again, not even by a woken server's
connection, and its ``cacheScope`` says which owners share it. The fixture server writes down every list it
serves, so the tests count what reached it."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import Daemon
from testing.fixtures import script
from testing.threads import START_TIMEOUT, call, start_thread, wait_ready

pytestmark = pytest.mark.daemon

LONG_TTL_MS = 600_000


def fresh_config(log: Path, ttl_ms: int, scope: str, **extra: Any) -> dict[str, Any]:
    command = script("fresh_catalog.py", str(log), str(ttl_ms), scope)
    return {"command": command[0], "args": command[1:], **extra}


def served(log: Path, method: str) -> list[str]:
    """The pids of the server processes that answered ``method``, in order."""
    lines = log.read_text().splitlines() if log.exists() else []
    return [line.split()[0] for line in lines if line.split()[1] == method]


def wait_idle(daemon: Daemon, thread_id: str, name: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        row = daemon.request("mcpServerStatus/list", {"threadId": thread_id, "serverName": name})["data"][0]
        if row["runtimeStatus"] == "idle":
            return
        assert time.monotonic() < deadline, "the server never went to sleep"
        time.sleep(0.05)


@pytest.mark.skipif(sys.platform != "linux", reason="stdio servers stopped by process group")
@pytest.mark.parametrize(("ttl_ms", "lists"), [(LONG_TTL_MS, 1), (0, 2)])
def test_a_woken_server_within_its_ttl_is_not_listed_again(
    daemon: Daemon, tmp_path: Path, ttl_ms: int, lists: int
) -> None:
    log = tmp_path / "lists.log"
    thread_id = start_thread(daemon, mcpServers={"fc": fresh_config(log, ttl_ms, "private", idleTimeoutMs=1000)})
    assert call(daemon, thread_id, "fc", "echo", {"text": "one"})["content"][0]["text"] == "one"
    wait_idle(daemon, thread_id, "fc")
    tools = daemon.request("mcpTool/listForContext", {"threadId": thread_id})
    assert [tool["name"] for tool in tools["data"]] == ["mcp__fc__echo"]  # asleep, answered from the catalog kept
    assert call(daemon, thread_id, "fc", "echo", {"text": "two"})["content"][0]["text"] == "two"
    pids = served(log, "tools/list")
    assert len(pids) == lists, pids
    assert len(served(log, "prompts/list")) == lists
    assert len(served(log, "resources/list")) == lists
    assert not daemon.notifications("mcp:tools_updated")
    prompts = daemon.request("mcpPrompt/list", {"threadId": thread_id})["data"]
    assert [prompt["name"] for prompt in prompts] == ["greet"]  # the kept listing is the real one


@pytest.mark.skipif(sys.platform != "linux", reason="stdio servers stopped by process group")
@pytest.mark.parametrize(("scope", "lists"), [("public", 1), ("private", 2)])
def test_a_public_catalog_is_shared_between_owners_and_a_private_one_is_not(
    daemon: Daemon, tmp_path: Path, scope: str, lists: int
) -> None:
    log = tmp_path / "lists.log"
    daemon.request("mcpServer/create", {"name": "fc", "config": fresh_config(log, LONG_TTL_MS, scope)})
    daemon.wait_notification(
        "mcpServer/startupStatus/updated",
        lambda p: p["threadId"] is None and p["name"] == "fc" and p["status"] == "ready",
        timeout=START_TIMEOUT,
    )
    thread_id = start_thread(daemon, servers=["fc"])
    wait_ready(daemon, thread_id, "fc")
    assert call(daemon, thread_id, "fc", "echo", {"text": "hi"})["content"][0]["text"] == "hi"
    assert len(served(log, "tools/list")) == lists
    other = start_thread(daemon, servers=["fc"])
    wait_ready(daemon, other, "fc")
    # A private listing is the reading owner's alone: the second thread reads its own.
    assert len(served(log, "tools/list")) == (1 if scope == "public" else 3)
