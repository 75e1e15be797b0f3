"""Quiet servers sleep (SPEC §4), driven as a host drives a day of conversations: a thread's server that went quiet
for its ``idleTimeoutMs`` is stopped and its row says ``idle``; its catalog is still served, without waking it; a
call wakes it (``starting`` → ``ready`` with the thread's id) and is answered by the woken server; an open
subscription and a pending elicitation keep it awake; the management connection never sleeps.

Every wait is for a condition with a deadline; the only fixed waits are the ones proving that something does NOT
happen within several idle timeouts.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import Daemon, running_daemon
from testing.fixtures import fixture_config
from testing.process_tree import children
from testing.threads import START_TIMEOUT, call, start_call, start_thread

pytestmark = [
    pytest.mark.daemon,
    pytest.mark.skipif(sys.platform != "linux", reason="counts the daemon's children in /proc"),
]

IDLE_MS = 1000
NOT_ASLEEP_S = 3 * IDLE_MS / 1000
"""Long enough that a server that could sleep would have: three idle timeouts."""


def _servers(daemon: Daemon) -> list[int]:
    """The daemon's stdio server processes (its child watcher is not one)."""
    assert daemon.process.pid is not None
    return [pid for pid, cmd in children(daemon.process.pid).items() if "watch-children" not in cmd]


def _row(daemon: Daemon, thread_id: str | None, name: str = "fx") -> dict[str, Any]:
    params: dict[str, Any] = {"serverName": name} | ({"threadId": thread_id} if thread_id else {})
    [row] = daemon.request("mcpServerStatus/list", params)["data"]
    return row  # type: ignore[no-any-return]


def _until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def _asleep(daemon: Daemon, thread_id: str) -> None:
    _until(lambda: _row(daemon, thread_id)["runtimeStatus"] == "idle" and not _servers(daemon), "asleep")


def _starts(daemon: Daemon, thread_id: str) -> list[str]:
    return [
        n["status"] for n in daemon.notifications("mcpServer/startupStatus/updated") if n["threadId"] == thread_id
    ]


def _quiet_thread(daemon: Daemon, **config: Any) -> str:
    daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config(idleTimeoutMs=IDLE_MS, **config)})
    # Created enabled, it starts in its management connection: stopped, so that only the thread's process runs.
    daemon.wait_notification(
        "mcpServer/startupStatus/updated", lambda p: p["threadId"] is None and p["status"] == "ready", timeout=60
    )
    daemon.request("mcpServer/stop", {"name": "fx"})
    thread_id = start_thread(daemon, servers=["fx"])
    assert call(daemon, thread_id, "fx", "echo", {"text": "first"})["content"][0]["text"] == "first"
    return thread_id


def test_a_quiet_server_sleeps_serves_its_catalog_asleep_and_wakes_on_a_call(daemon: Daemon) -> None:
    thread_id = _quiet_thread(daemon)
    changed = call(daemon, thread_id, "fx", "change_tools")["content"][0]["text"]
    daemon.wait_notification("mcp:tools_updated", lambda p: p["threadId"] == thread_id, timeout=START_TIMEOUT)
    awake = {t["tool"] for t in daemon.request("mcpTool/listForContext", {"threadId": thread_id})["data"]}
    assert len([name for name in awake if name.startswith("dynamic")]) == 1, (changed, awake)
    _asleep(daemon, thread_id)
    assert _starts(daemon, thread_id) == ["starting", "ready"]

    asleep = {t["tool"] for t in daemon.request("mcpTool/listForContext", {"threadId": thread_id})["data"]}
    assert asleep == awake, "the last catalog, list_changed included, is served while asleep"
    found = daemon.request("mcpTool/search", {"query": "echo", "threadId": thread_id})["data"]
    assert [t["tool"] for t in found][:1] == ["echo"]
    assert daemon.request("mcpPrompt/list", {"threadId": thread_id, "server": "fx"})["data"]
    assert _row(daemon, thread_id)["tools"], "the idle row keeps its tools"
    assert _servers(daemon) == [] and _starts(daemon, thread_id) == ["starting", "ready"], "nothing woke it"

    assert call(daemon, thread_id, "fx", "echo", {"text": "woken"})["content"][0]["text"] == "woken"
    assert _starts(daemon, thread_id) == ["starting", "ready", "starting", "ready"]
    assert _row(daemon, thread_id)["runtimeStatus"] == "connected" and len(_servers(daemon)) == 1
    fresh = {t["tool"] for t in daemon.request("mcpTool/listForContext", {"threadId": thread_id})["data"]}
    assert fresh == awake - {name for name in awake if name.startswith("dynamic")}, "the woken server's own list"


def test_a_read_and_a_prompt_get_wake_it_too(daemon: Daemon) -> None:
    thread_id = _quiet_thread(daemon)
    _asleep(daemon, thread_id)
    [uri] = [r["uri"] for r in daemon.request("mcpResource/list", {"threadId": thread_id})["resources"]][:1]
    read = daemon.request("mcpServer/resource/read", {"threadId": thread_id, "server": "fx", "uri": uri}, timeout=60)
    assert read["contents"]
    assert _starts(daemon, thread_id)[-2:] == ["starting", "ready"]
    _asleep(daemon, thread_id)
    prompt = daemon.request("mcpPrompt/list", {"threadId": thread_id})["data"][0]
    arguments = {a["name"]: "x" for a in prompt["arguments"] if a.get("required")}
    got = daemon.request(
        "mcpPrompt/get", {"threadId": thread_id, "server": "fx", "name": prompt["name"], "arguments": arguments}, 60
    )
    assert got["messages"] and _starts(daemon, thread_id).count("ready") == 3


def test_an_open_subscription_keeps_it_awake_until_unsubscribed(daemon: Daemon) -> None:
    thread_id = _quiet_thread(daemon)
    uri = daemon.request("mcpResource/list", {"threadId": thread_id})["resources"][0]["uri"]
    params = {"threadId": thread_id, "server": "fx", "uri": uri}
    daemon.request("mcpResource/subscribe", params, timeout=60)
    time.sleep(NOT_ASLEEP_S)
    assert _row(daemon, thread_id)["runtimeStatus"] == "connected" and len(_servers(daemon)) == 1
    daemon.request("mcpResource/unsubscribe", params, timeout=60)
    _asleep(daemon, thread_id)


def test_a_pending_elicitation_keeps_it_awake(daemon: Daemon) -> None:
    thread_id = _quiet_thread(daemon)
    asked = start_call(daemon, thread_id, "fx", "ask", {"question": "who?"})
    form = daemon.wait_server_request("mcpServer/elicitation/request", timeout=START_TIMEOUT)
    time.sleep(NOT_ASLEEP_S)  # the person takes their time
    assert _row(daemon, thread_id)["runtimeStatus"] == "connected" and len(_servers(daemon)) == 1
    daemon.answer(form["id"], {"action": "accept", "content": {"name": "Ada", "age": 36}})
    assert "Ada" in daemon.wait_response(asked, timeout=START_TIMEOUT)["result"]["content"][0]["text"]
    _asleep(daemon, thread_id)


def test_the_management_connection_and_a_zero_timeout_never_sleep(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config(idleTimeoutMs=IDLE_MS)})
    daemon.request("mcpServer/create", {"name": "never", "config": fixture_config(idleTimeoutMs=0)})
    daemon.request("mcpServer/start", {"name": "fx"}, timeout=60)
    thread_id = start_thread(daemon, servers=["never"])
    call(daemon, thread_id, "never", "echo", {"text": "x"})
    time.sleep(NOT_ASLEEP_S)
    assert _row(daemon, None)["runtimeStatus"] == "connected"
    assert _row(daemon, thread_id, "never")["runtimeStatus"] == "connected"
    assert len(_servers(daemon)) == 3  # fx's and never's management connections (started by their creation), never's


@pytest.mark.parametrize("value", [1, 999, 86_400_001, -1, True, "1000", 1000.0])
def test_an_idle_timeout_out_of_range_is_refused(daemon: Daemon, value: object) -> None:
    response = daemon.wait_response(
        daemon.start_request("mcpServer/create", {"name": "fx", "config": fixture_config(idleTimeoutMs=value)})
    )
    assert response["error"]["data"]["reason"] == "invalidParams"
    assert any("idleTimeoutMs" in e["path"] for e in response["error"]["data"]["errors"])


def _pss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        total += next(int(line.split()[1]) for line in text.splitlines() if line.startswith("Pss:"))
    return total


def _many_quiet_threads(data_dir: Path, threads: int, servers: int) -> tuple[int, int]:
    """``threads`` conversations, each with ``servers`` stdio servers used once; (PSS in KiB of the daemon and its
    children while the last ones are awake, once all went quiet)."""
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        names = [f"s{i}" for i in range(servers)]
        for name in names:
            daemon.request("mcpServer/create", {"name": name, "config": fixture_config(idleTimeoutMs=IDLE_MS)})
        for name in names:  # started by their creation; stopped, so that only the threads' processes are counted
            daemon.wait_notification(
                "mcpServer/startupStatus/updated",
                lambda p, name=name: (p["threadId"], p["name"], p["status"]) == (None, name, "ready"),
                timeout=60,
            )
            daemon.request("mcpServer/stop", {"name": name})
        assert daemon.process.pid is not None
        every = [daemon.process.pid]
        busiest = 0
        for _ in range(threads):
            thread_id = start_thread(daemon, servers=names)
            for name in names:
                call(daemon, thread_id, name, "echo", {"text": "once"})
            busiest = max(busiest, _pss_kib([daemon.process.pid, *_servers(daemon)]))
        _until(lambda: not _servers(daemon), "every server asleep", timeout=120)
        rows = daemon.request("mcpServerStatus/list", {"threadId": thread_id})["data"]
        assert {row["runtimeStatus"] for row in rows} == {"idle"}
        return busiest, _pss_kib(every)


def test_many_quiet_conversations_cost_what_the_daemon_holds(data_dir: Path) -> None:
    _, quiet = _many_quiet_threads(data_dir, threads=6, servers=2)
    assert quiet < 400 * 1024, f"{quiet // 1024} MiB PSS"


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_fifty_conversations_of_four_servers_go_quiet_within_400_mib(data_dir: Path) -> None:
    busiest, quiet = _many_quiet_threads(data_dir, threads=50, servers=4)
    assert quiet < 400 * 1024, f"{quiet // 1024} MiB PSS once quiet (busiest {busiest // 1024} MiB)"
