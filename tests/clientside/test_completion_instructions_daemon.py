"""Argument completion and server instructions (SPEC §16) through the real daemon, against server-everything
(completions and instructions) and the SDK fixture server (neither)."""

from __future__ import annotations

import pytest

from testing.daemon_client import Daemon
from testing.fixtures import NODE_MODULES, everything_config, fixture_config
from testing.threads import START_TIMEOUT, start_thread, wait_ready

pytestmark = [pytest.mark.daemon, pytest.mark.skipif(
    not (NODE_MODULES / "@modelcontextprotocol" / "server-everything").exists(), reason="npm servers not installed"
)]


def complete(daemon: Daemon, value: str, **extra: object) -> dict[str, object]:
    params = {
        "server": "ev",
        "ref": {"type": "prompt", "name": "completable-prompt"},
        "argument": {"name": "department", "value": value},
        **extra,
    }
    answer: dict[str, object] = daemon.request("mcpServer/completion/complete", params, timeout=START_TIMEOUT)
    return answer


def test_prompt_arguments_complete_through_a_thread_and_management(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"ev": everything_config()})
    assert complete(daemon, "E", threadId=thread_id) == {"values": ["Engineering"], "total": 1, "hasMore": False}
    every = complete(daemon, "", threadId=thread_id)["values"]
    assert isinstance(every, list) and "Engineering" in every and len(every) > 1
    daemon.request("mcpServer/create", {"name": "ev", "config": everything_config()})
    daemon.request("mcpServer/start", {"name": "ev"}, timeout=START_TIMEOUT)
    assert complete(daemon, "Eng")["values"] == ["Engineering"]


def test_a_server_without_completions_suggests_nothing(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    params = {
        "server": "fx",
        "threadId": thread_id,
        "ref": {"type": "prompt", "name": "greet"},
        "argument": {"name": "name", "value": "A"},
    }
    answer = daemon.request("mcpServer/completion/complete", params, timeout=START_TIMEOUT)
    assert answer == {"values": [], "hasMore": False}


def test_instructions_are_data_on_full_rows_and_thread_start(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "ev", "config": everything_config()})
    daemon.request("mcpServer/start", {"name": "ev"}, timeout=START_TIMEOUT)
    [row] = daemon.request("mcpServerStatus/list", {"serverName": "ev"})["data"]
    assert row["instructions"].startswith("# Everything Server") and "instructionsTruncated" not in row
    [brief] = daemon.request("mcpServerStatus/list", {"serverName": "ev", "detail": "toolsAndAuthOnly"})["data"]
    assert "instructions" not in brief
    started = daemon.request("thread/start", {"servers": ["ev"]})
    assert started["instructions"] == {"ev": {"instructions": row["instructions"]}}
    wait_ready(daemon, started["thread"]["id"], "ev")
    params = {"serverName": "ev", "threadId": started["thread"]["id"]}
    assert daemon.request("mcpServerStatus/list", params)["data"][0]["instructions"] == row["instructions"]
