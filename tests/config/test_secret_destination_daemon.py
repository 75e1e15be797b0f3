"""A kept secret never follows a server to a new destination (SPEC §5), driven as the attacking client would.

The attack: one ``mcpServer/update`` that points a stored server at another program (or URL) while sending the
listed ``"***"`` back, then one tool call to the new program, which reports what it got. ``env_digest`` of the
fixture server answers the SHA-256 of a variable, so a test sees whether the secret arrived without showing it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import Daemon, DaemonError
from testing.fixtures import fixture_config

pytestmark = pytest.mark.daemon

START_TIMEOUT = 40.0
SECRET = "kept-secret-that-must-not-move"
DIGEST = hashlib.sha256(SECRET.encode()).hexdigest()
ENV = shutil.which("env") or "/usr/bin/env"


def digest_of(daemon: Daemon, server: str, variable: str = "API_KEY", config: dict[str, Any] | None = None) -> str:
    """What a fresh thread's server process got in ``variable`` (as its SHA-256, or ``unset``)."""
    params: dict[str, Any] = {"servers": [server]} if config is None else {"mcpServers": {server: config}}
    thread_id = daemon.request("thread/start", params)["thread"]["id"]
    result = daemon.request(
        "mcpServer/tool/call",
        {"threadId": thread_id, "server": server, "tool": "env_digest", "arguments": {"name": variable}},
        timeout=START_TIMEOUT,
    )
    text: str = result["content"][0]["text"]
    return text


def listed_config(daemon: Daemon, name: str) -> dict[str, Any]:
    config: dict[str, Any] = daemon.request("mcpServer/list", {"names": [name]})["data"][0]["config"]
    return config


def refused(daemon: Daemon, method: str, params: dict[str, Any]) -> DaemonError:
    with pytest.raises(DaemonError) as err:
        daemon.request(method, params)
    return err.value


def stored_file(data_dir: Path) -> str:
    return (data_dir / "mcps.json").read_text()


def moved_program(config: dict[str, Any]) -> dict[str, Any]:
    """The same server run through ``env`` (another command, other args): a program the client chose."""
    return {**config, "command": ENV, "args": [config["command"], *config["args"]]}


def test_update_to_another_command_does_not_take_the_secret_along(daemon: Daemon, data_dir: Path) -> None:
    daemon.request(
        "mcpServer/create", {"name": "fx", "config": fixture_config("--env-digest-tool", env={"API_KEY": SECRET})}
    )
    assert digest_of(daemon, "fx") == DIGEST  # the stored server gets its secret
    before = stored_file(data_dir)
    shown = listed_config(daemon, "fx")
    assert shown["env"] == {"API_KEY": "***"}

    # The attack of issue 22.3: the listed config back, pointing at another program.
    err = refused(daemon, "mcpServer/update", {"name": "fx", "config": moved_program(shown)})
    assert (err.code, err.reason, err.data["path"]) == (-32602, "redactedValue", "config.env.API_KEY")
    assert err.data["errors"][0]["path"] == "config.env.API_KEY"
    # Other arguments to the same program are another destination too.
    other_args = {**shown, "args": [*shown["args"], "--name", "other"]}
    assert refused(daemon, "mcpServer/update", {"name": "fx", "config": other_args}).reason == "redactedValue"
    # A merge patch of command/args leaves the stored env value in place: refused the same way.
    moved = moved_program(shown)
    for patch in ({"command": moved["command"], "args": moved["args"]}, {"args": other_args["args"]}):
        err = refused(daemon, "mcpServer/update", {"name": "fx", "patch": patch})
        assert (err.reason, err.data["path"]) == ("redactedValue", "config.env.API_KEY")
    err = refused(daemon, "mcpServer/update", {"name": "fx", "patch": {**patch, "env": {"API_KEY": "***"}}})
    assert err.reason == "redactedValue"
    assert stored_file(data_dir) == before  # nothing was written
    assert digest_of(daemon, "fx") == DIGEST

    # The client sends the value again (or drops it): the move is allowed, and only what was sent arrives.
    daemon.request("mcpServer/update", {"name": "fx", "patch": {**patch, "env": {"API_KEY": "sent-again"}}})
    assert digest_of(daemon, "fx") == hashlib.sha256(b"sent-again").hexdigest()
    daemon.request("mcpServer/update", {"name": "fx", "config": {**moved_program(shown), "env": {}}})
    assert digest_of(daemon, "fx") == "unset"


def test_thread_start_cannot_move_an_app_servers_secret(daemon: Daemon) -> None:
    daemon.request(
        "mcpServer/create", {"name": "fx", "config": fixture_config("--env-digest-tool", env={"API_KEY": SECRET})}
    )
    shown = listed_config(daemon, "fx")
    err = refused(daemon, "thread/start", {"mcpServers": {"fx": moved_program(shown)}})
    assert (err.reason, err.data["path"]) == ("redactedValue", "mcpServers.fx.env.API_KEY")
    assert digest_of(daemon, "fx", config=shown) == DIGEST  # the listed config as it is still works


def test_ordinary_edits_keep_the_secret(daemon: Daemon, data_dir: Path) -> None:
    daemon.request(
        "mcpServer/create", {"name": "fx", "config": fixture_config("--env-digest-tool", env={"API_KEY": SECRET})}
    )
    shown = listed_config(daemon, "fx")
    daemon.request("mcpServer/update", {"name": "fx", "config": {**shown, "description": "edited"}})
    daemon.request("mcpServer/update", {"name": "fx", "patch": {"toolTimeoutMs": 9000, "startupTimeoutMs": 40000}})
    daemon.request("mcpServer/update", {"name": "fx", "patch": {"enabled": False, "env": {"API_KEY": "***"}}})
    daemon.request("mcpServer/enabled/set", {"name": "fx", "enabled": True})
    daemon.request("mcpServer/update", {"name": "fx", "patch": {"env": {"OTHER": "1"}}})
    entry = json.loads(stored_file(data_dir))["mcpServers"]["fx"]
    assert entry["env"] == {"API_KEY": SECRET, "OTHER": "1"}
    assert (entry["description"], entry["toolTimeoutMs"], entry["enabled"]) == ("edited", 9000, True)
    assert digest_of(daemon, "fx") == DIGEST


HTTP = {"type": "http", "url": "https://docs.example.com/mcp?v=1", "enabled": False, "headers": {"X-Title": "app"}}


@pytest.mark.parametrize(
    "url",
    ["https://evil.example.com/mcp", "https://docs.example.com:8443/mcp", "https://docs.example.com/other",
     "http://127.0.0.1:9/mcp"],
)  # fmt: skip
def test_a_header_value_does_not_follow_a_new_url(daemon: Daemon, data_dir: Path, url: str) -> None:
    daemon.request("mcpServer/create", {"name": "docs", "config": HTTP})
    before = stored_file(data_dir)
    shown = listed_config(daemon, "docs")
    err = refused(daemon, "mcpServer/update", {"name": "docs", "config": {**shown, "url": url}})
    assert (err.code, err.reason, err.data["path"]) == (-32602, "redactedValue", "config.headers.X-Title")
    err = refused(daemon, "mcpServer/update", {"name": "docs", "patch": {"url": url}})
    assert (err.reason, err.data["path"]) == ("redactedValue", "config.headers.X-Title")
    assert stored_file(data_dir) == before
    daemon.request("mcpServer/update", {"name": "docs", "patch": {"url": url, "headers": {"X-Title": "again"}}})
    assert json.loads(stored_file(data_dir))["mcpServers"]["docs"]["headers"] == {"X-Title": "again"}


def test_same_origin_and_path_keeps_the_header(daemon: Daemon, data_dir: Path) -> None:
    daemon.request("mcpServer/create", {"name": "docs", "config": HTTP})
    shown = listed_config(daemon, "docs")
    daemon.request("mcpServer/update", {"name": "docs", "config": {**shown, "url": "https://DOCS.example.com:443/mcp"}})
    daemon.request("mcpServer/update", {"name": "docs", "patch": {"url": "https://docs.example.com/mcp?v=2"}})
    assert json.loads(stored_file(data_dir))["mcpServers"]["docs"]["headers"] == {"X-Title": "app"}
