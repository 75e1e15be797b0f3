"""A host's settings page against the real daemon: lossless edits, merge patches, lookups by name, plain errors.

The secret must survive the round trip all the way to a real server: ``get-env`` of the reference
``server-everything`` prints the environment the thread's child process actually got.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import Daemon, DaemonError
from testing.fixtures import everything_config

pytestmark = pytest.mark.daemon

START_TIMEOUT = 40.0
SECRET = "s3cr3t-value-for-test"
HTTP = {
    "type": "http",
    "url": "http://127.0.0.1:9/mcp",
    "enabled": False,
    "headers": {"X-Title": "my-app"},
    "envHeaders": {"X-Api-Key": "DOCS_API_KEY"},
}


def child_env(daemon: Daemon, server: str, config: dict[str, Any] | None = None) -> dict[str, str]:
    """The environment the server's process got in a fresh thread (``get-env`` of server-everything)."""
    params: dict[str, Any] = {"servers": [server]} if config is None else {"mcpServers": {server: config}}
    thread_id = daemon.request("thread/start", params)["thread"]["id"]
    result = daemon.request(
        "mcpServer/tool/call", {"threadId": thread_id, "server": server, "tool": "get-env"}, timeout=START_TIMEOUT
    )
    env: dict[str, str] = json.loads(result["content"][0]["text"])
    return env


def listed(daemon: Daemon, *names: str) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in daemon.request("mcpServer/list", {"names": list(names)})["data"]}


def stored(data_dir: Path, name: str) -> dict[str, Any]:
    entry: dict[str, Any] = json.loads((data_dir / "mcps.json").read_text())["mcpServers"][name]
    return entry


def error_of(daemon: Daemon, method: str, params: dict[str, Any]) -> DaemonError:
    with pytest.raises(DaemonError) as err:
        daemon.request(method, params)
    return err.value


def test_settings_page_round_trip_keeps_every_secret(daemon: Daemon, data_dir: Path) -> None:
    config = everything_config(env={"API_KEY": SECRET, "LOG_LEVEL": "warn"})
    daemon.request("mcpServer/create", {"name": "ev", "config": config})
    daemon.request("mcpServer/create", {"name": "docs", "config": HTTP})

    shown = listed(daemon, "ev", "docs")
    assert SECRET not in json.dumps(shown)
    assert shown["ev"]["config"]["env"] == {"API_KEY": "***", "LOG_LEVEL": "***"}
    assert shown["docs"]["config"]["headers"] == {"X-Title": "***"}
    assert shown["docs"]["config"]["envHeaders"] == {"X-Api-Key": "DOCS_API_KEY"}

    # The host sends each listed config back with one field changed.
    ev = {**shown["ev"]["config"], "description": "edited"}
    ev["env"] = {**ev["env"], "LOG_LEVEL": "debug"}
    updated = daemon.request(
        "mcpServer/update", {"name": "ev", "config": ev, "expectedRevision": shown["ev"]["revision"]}
    )["server"]
    assert updated["revision"] == shown["ev"]["revision"] + 1
    assert updated["config"]["env"] == {"API_KEY": "***", "LOG_LEVEL": "***"}
    daemon.request("mcpServer/update", {"name": "docs", "config": {**shown["docs"]["config"], "description": "d"}})

    assert stored(data_dir, "ev")["env"] == {"API_KEY": SECRET, "LOG_LEVEL": "debug"}
    assert stored(data_dir, "docs")["headers"] == {"X-Title": "my-app"}
    env = child_env(daemon, "ev")
    assert env["API_KEY"] == SECRET and env["LOG_LEVEL"] == "debug"
    # The listed config handed to thread/start as an inline server is the stored one, secrets included.
    relisted = listed(daemon, "ev")["ev"]["config"]
    assert child_env(daemon, "ev", relisted)["API_KEY"] == SECRET
    strict = error_of(daemon, "thread/start", {"strictMcpConfig": True, "mcpServers": {"ev": relisted}})
    assert (strict.reason, strict.data["path"]) == ("redactedValue", "mcpServers.ev.env.API_KEY")

    # A stale revision is still refused, and nothing changes.
    stale = error_of(daemon, "mcpServer/update", {"name": "ev", "config": ev, "expectedRevision": 1})
    assert stale.reason == "revisionMismatch"


def test_redacted_value_where_nothing_is_stored_is_refused(daemon: Daemon, data_dir: Path) -> None:
    daemon.request("mcpServer/create", {"name": "ev", "config": everything_config(env={"A": "1"})})
    config = {**listed(daemon, "ev")["ev"]["config"], "env": {"A": "***", "B": "***"}}
    err = error_of(daemon, "mcpServer/update", {"name": "ev", "config": config})
    assert (err.code, err.reason, err.data["path"]) == (-32602, "redactedValue", "config.env.B")
    err = error_of(daemon, "mcpServer/create", {"name": "new", "config": everything_config(env={"X": "***"})})
    assert (err.reason, err.data["path"]) == ("redactedValue", "config.env.X")
    assert stored(data_dir, "ev")["env"] == {"A": "1"}
    assert set(json.loads((data_dir / "mcps.json").read_text())["mcpServers"]) == {"ev"}


def test_merge_patch_enables_disables_and_removes_keys(daemon: Daemon, data_dir: Path) -> None:
    config = everything_config(env={"API_KEY": SECRET}, description="first", toolTimeoutMs=5000)
    daemon.request("mcpServer/create", {"name": "ev", "config": config})

    off = daemon.request("mcpServer/update", {"name": "ev", "patch": {"enabled": False}})["server"]
    assert off["enabled"] is False and off["revision"] == 2
    on = daemon.request("mcpServer/update", {"name": "ev", "patch": {"enabled": True}, "expectedRevision": 2})
    assert on["server"]["enabled"] is True

    removed = daemon.request(
        "mcpServer/update", {"name": "ev", "patch": {"description": None, "toolTimeoutMs": None, "env": {"X": "1"}}}
    )["server"]["config"]
    assert "description" not in removed and "toolTimeoutMs" not in removed
    entry = stored(data_dir, "ev")
    assert entry["env"] == {"API_KEY": SECRET, "X": "1"}  # objects merge key by key
    assert "description" not in entry and "toolTimeoutMs" not in entry

    dropped = daemon.request("mcpServer/update", {"name": "ev", "patch": {"env": {"X": None}}})["server"]
    assert dropped["config"]["env"] == {"API_KEY": "***"}
    assert child_env(daemon, "ev")["API_KEY"] == SECRET


def test_patch_is_validated_as_a_whole(daemon: Daemon, data_dir: Path) -> None:
    daemon.request("mcpServer/create", {"name": "ev", "config": everything_config()})
    before = (data_dir / "mcps.json").read_text()
    err = error_of(daemon, "mcpServer/update", {"name": "ev", "patch": {"command": None}})
    assert err.reason == "invalidParams"
    assert err.data["errors"] == [{"path": "config.command", "message": "Field required"}]
    err = error_of(daemon, "mcpServer/update", {"name": "ev", "patch": {"type": "http"}})
    assert err.reason == "invalidParams"
    assert all("stdio" not in e["path"] for e in err.data["errors"])
    both = error_of(daemon, "mcpServer/update", {"name": "ev", "patch": {}, "config": everything_config()})
    neither = error_of(daemon, "mcpServer/update", {"name": "ev"})
    assert both.reason == neither.reason == "invalidParams"
    missing = error_of(daemon, "mcpServer/update", {"name": "nope", "patch": {"enabled": False}})
    assert (missing.reason, missing.data["server"]) == ("unknownServer", "nope")
    assert (data_dir / "mcps.json").read_text() == before


def test_list_by_names(daemon: Daemon) -> None:
    for name in ("a", "b", "c"):
        daemon.request("mcpServer/create", {"name": name, "config": {"command": "x", "enabled": False}})
    data = daemon.request("mcpServer/list", {"names": ["c", "a"]})["data"]
    assert [s["name"] for s in data] == ["c", "a"]
    assert daemon.request("mcpServer/list", {"names": []})["data"] == []
    err = error_of(daemon, "mcpServer/list", {"names": ["a", "zz"]})
    assert (err.code, err.reason, err.data["server"]) == (-32010, "unknownServer", "zz")


def test_list_shows_the_config_as_written(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "a", "config": {"command": "x", "enabled": False}})
    assert listed(daemon, "a")["a"]["config"] == {"type": "stdio", "command": "x", "enabled": False}


@pytest.mark.parametrize(
    ("config", "path", "words"),
    [
        ({"url": "https://docs.example.com/mcp"}, "config.type", 'needs type: "http"'),
        ({"type": "sse", "url": "https://docs.example.com/mcp"}, "config.type", '"stdio" or "http"'),
        ({"type": "http"}, "config.url", "Field required"),
        ({"command": "x", "headers": {}}, "config.headers", "not a field of a stdio server"),
        ({"command": "x", "apps": 3}, "config.apps", "must be an object"),
        ({"command": "x", "startupTimeoutMs": 0}, "config.startupTimeoutMs", "greater than or equal to 1"),
        ("node", "config", "must be an object"),
    ],
)
def test_config_errors_are_plain_words_with_the_path(daemon: Daemon, config: Any, path: str, words: str) -> None:
    err = error_of(daemon, "mcpServer/create", {"name": "s", "config": config})
    assert (err.code, err.reason) == (-32602, "invalidParams")
    errors = err.data["errors"]
    assert [e["path"] for e in errors] == [path], errors
    assert words in errors[0]["message"]
    noise = json.dumps(err.data) + err.message
    for internal in ("_config_type", "Input tag", "StdioServerConfig", "HttpServerConfig", ".stdio.", ".http."):
        assert internal not in noise


@pytest.mark.parametrize("timeout_ms", [0, 300_001, 3_600_000])
def test_tool_call_timeout_is_bounded(daemon: Daemon, timeout_ms: int) -> None:
    err = error_of(
        daemon,
        "mcpServer/tool/call",
        {"threadId": "thr_x", "server": "s", "tool": "t", "timeoutMs": timeout_ms},
    )
    assert (err.reason, err.data["errors"][0]["path"]) == ("invalidParams", "timeoutMs")


def test_thread_start_config_errors_are_plain_too(daemon: Daemon) -> None:
    err = error_of(daemon, "thread/start", {"mcpServers": {"docs": {"url": "https://docs.example.com/mcp"}}})
    [only] = err.data["errors"]
    assert only["path"] == "mcpServers.docs.type" and 'needs type: "http"' in only["message"]
    err = error_of(daemon, "thread/start", {"mcpServers": 5})
    assert err.data["errors"] == [{"path": "mcpServers", "message": "Input should be an object"}]
