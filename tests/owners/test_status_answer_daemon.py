"""``mcpServerStatus/list`` is answered from a kept answer while nothing changed: every real change shows.

Driven through the real daemon and real servers (the SDK fixture over stdio, the OAuth fixture over HTTP): a
stop, a restart, a disable, a delete, a ``tools/list_changed`` and a login each change the next answer, and
pages, single-server reads and the slim detail never see a stale or foreign answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scripts.smoke.fixtures.launch import oauth_fixture
from testing.daemon_client import Daemon, running_daemon
from testing.fixtures import fixture_config
from testing.oauth import login
from testing.threads import call, start_thread, wait_ready

pytestmark = pytest.mark.daemon

TIMEOUT = 60.0


def rows(d: Daemon, **params: Any) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in d.request("mcpServerStatus/list", params)["data"]}


def test_lifecycle_changes_show_in_the_next_answer(daemon: Daemon) -> None:
    for name in ("a", "b"):
        daemon.request("mcpServer/create", {"name": name, "config": fixture_config()})
        daemon.request("mcpServer/start", {"name": name}, timeout=TIMEOUT)
    first = rows(daemon)
    assert rows(daemon) == first
    assert {row["runtimeStatus"] for row in first.values()} == {"connected"}
    assert "echo" in first["a"]["tools"]

    daemon.request("mcpServer/stop", {"name": "a"})
    stopped = rows(daemon)
    assert stopped["a"]["runtimeStatus"] == "notStarted" and "echo" not in stopped["a"]["tools"]
    assert stopped["b"] == first["b"]

    daemon.request("mcpServer/start", {"name": "a"}, timeout=TIMEOUT)
    assert rows(daemon)["a"]["runtimeStatus"] == "connected"

    daemon.request("mcpServer/stop", {"name": "b"})
    daemon.request("mcpServer/enabled/set", {"name": "b", "enabled": False})
    assert rows(daemon)["b"]["runtimeStatus"] == "disabled"

    daemon.request("mcpServer/delete", {"name": "b"})
    assert set(rows(daemon)) == {"a"}


def test_pages_single_reads_and_detail_are_never_served_another_answer(daemon: Daemon) -> None:
    for name in ("a", "b"):
        daemon.request("mcpServer/create", {"name": name, "config": fixture_config()})
        daemon.request("mcpServer/start", {"name": name}, timeout=TIMEOUT)  # settled: a create starts it too
    whole = daemon.request("mcpServerStatus/list")
    assert [row["name"] for row in whole["data"]] == ["a", "b"] and "nextCursor" not in whole

    first = daemon.request("mcpServerStatus/list", {"limit": 1})
    assert [row["name"] for row in first["data"]] == ["a"] and first["nextCursor"]
    rest = daemon.request("mcpServerStatus/list", {"cursor": first["nextCursor"]})
    assert rest["data"] == whole["data"][1:] and "nextCursor" not in rest
    only = daemon.request("mcpServerStatus/list", {"serverName": "b"})["data"]
    assert only == whole["data"][1:]
    slim = daemon.request("mcpServerStatus/list", {"detail": "toolsAndAuthOnly"})["data"]
    assert "serverInfo" not in slim[1] and slim[1]["tools"] == whole["data"][1]["tools"]
    assert daemon.request("mcpServerStatus/list") == whole


def test_tools_list_changed_shows_in_the_threads_answer(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    wait_ready(daemon, thread_id, "fx")
    before = rows(daemon, threadId=thread_id)["fx"]
    assert before["runtimeStatus"] == "connected" and "dynamic_1" not in before["tools"]
    assert rows(daemon, threadId=thread_id)["fx"] == before

    assert call(daemon, thread_id, "fx", "change_tools")["content"][0]["text"] == "dynamic_1"
    daemon.wait_notification("mcp:tools_updated", lambda p: p["threadId"] == thread_id and p["server"] == "fx")
    after = rows(daemon, threadId=thread_id)["fx"]
    assert "dynamic_1" in after["tools"] and set(before["tools"]) < set(after["tools"])


def test_login_shows_in_the_answer_of_this_daemon_and_of_another_on_the_same_data_dir(data_dir: Path) -> None:
    with oauth_fixture() as url, running_daemon(data_dir) as d, running_daemon(data_dir) as other:
        d.initialize()
        other.initialize()
        d.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": url, "oauth": {}}})
        assert rows(d)["sec"]["authStatus"] == "notLoggedIn"
        assert rows(other)["sec"]["authStatus"] == "notLoggedIn"
        assert login(d, "sec")["success"]
        assert rows(d)["sec"]["authStatus"] == "oAuth"
        # The other daemon learns of the login from the credentials file alone.
        assert rows(other)["sec"]["authStatus"] == "oAuth"
