"""``--transports`` and ``--stdio-sandbox`` (SPEC §1): the host's deployment policy, enforced by the daemon."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import ROOT, Daemon, DaemonError, running_daemon
from testing.fixtures import everything_config

pytestmark = pytest.mark.daemon

START_TIMEOUT = 40.0
WEB = {"type": "http", "url": "http://127.0.0.1:9/mcp", "enabled": False}


def error_of(daemon: Daemon, method: str, params: dict[str, Any]) -> DaemonError:
    with pytest.raises(DaemonError) as err:
        daemon.request(method, params, timeout=START_TIMEOUT)
    return err.value


@pytest.fixture
def stdio_only(data_dir: Path, tmp_path: Path) -> Iterator[Daemon]:
    """A daemon allowing stdio only, with an http server already in the store and one in Claude Code's file."""
    (data_dir / "mcps.json").write_text(json.dumps({"version": 1, "mcpServers": {"web": WEB}}))
    home = tmp_path / "home"
    home.mkdir()
    servers = {"remote": {"type": "http", "url": "https://r.example.com/mcp"}, "local": {"command": "x"}}
    (home / ".claude.json").write_text(json.dumps({"mcpServers": servers}))
    with running_daemon(data_dir, env={"HOME": str(home)}, args=("--transports", "stdio")) as daemon:
        daemon.initialize()
        yield daemon


def test_a_disallowed_transport_fails_closed_everywhere(stdio_only: Daemon) -> None:
    created = error_of(stdio_only, "mcpServer/create", {"name": "web2", "config": WEB})
    assert (created.code, created.reason, created.data["transport"]) == (-32012, "transportNotAllowed", "http")

    imported = stdio_only.request("mcpServer/importFromApp", {"app": "claude"})
    assert imported["imported"] == ["local"]
    assert imported["skipped"] == [{"name": "remote", "reason": "transportNotAllowed"}]

    started = error_of(stdio_only, "mcpServer/start", {"name": "web"})
    assert started.reason == "transportNotAllowed"
    failed = stdio_only.wait_notification(
        "mcpServer/startupStatus/updated", lambda p: p["name"] == "web" and p["status"] == "failed"
    )
    assert failed["error"]["reason"] == "transportNotAllowed"

    inline = error_of(stdio_only, "thread/start", {"mcpServers": {"w": {**WEB, "enabled": True}}})
    assert inline.reason == "transportNotAllowed"
    stdio_only.request("mcpServer/update", {"name": "web", "patch": {"enabled": True}})
    from_store = error_of(stdio_only, "thread/start", {"servers": ["web"]})
    assert from_store.reason == "transportNotAllowed"

    # A stored server can still be edited without changing its transport; changing to one is refused.
    stdio_only.request("mcpServer/update", {"name": "web", "patch": {"description": "kept"}})
    stdio_only.request("mcpServer/create", {"name": "ok", "config": {"command": "x", "enabled": False}})
    moved = error_of(stdio_only, "mcpServer/update", {"name": "ok", "config": WEB})
    assert moved.reason == "transportNotAllowed"


def test_http_only_refuses_stdio(data_dir: Path) -> None:
    with running_daemon(data_dir, args=("--transports", "http")) as daemon:
        daemon.initialize()
        err = error_of(daemon, "mcpServer/create", {"name": "s", "config": {"command": "x"}})
        assert (err.reason, err.data["transport"]) == ("transportNotAllowed", "stdio")
        daemon.request("mcpServer/create", {"name": "w", "config": WEB})


def test_stdio_sandbox_prefixes_every_stdio_server(data_dir: Path) -> None:
    with running_daemon(data_dir, args=("--stdio-sandbox", '["env", "SANDBOXED=1"]')) as daemon:
        daemon.initialize()
        thread_id = daemon.request("thread/start", {"mcpServers": {"ev": everything_config()}})["thread"]["id"]
        result = daemon.request(
            "mcpServer/tool/call", {"threadId": thread_id, "server": "ev", "tool": "get-env"}, timeout=START_TIMEOUT
        )
        assert json.loads(result["content"][0]["text"])["SANDBOXED"] == "1"


@pytest.mark.parametrize(
    "args",
    [
        ("--stdio-sandbox", "not json"),
        ("--stdio-sandbox", "[]"),
        ("--stdio-sandbox", '["bwrap", 1]'),
        ("--stdio-sandbox", '{"argv": ["bwrap"]}'),
        ("--stdio-sandbox", '[""]'),
        ("--transports", "stdio,sse"),
        ("--transports", ""),
    ],
)
def test_invalid_policy_options_exit_2(data_dir: Path, args: tuple[str, ...]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "app_server", "--data-dir", str(data_dir), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stdout == b""
    assert args[0] in done.stderr.decode()
