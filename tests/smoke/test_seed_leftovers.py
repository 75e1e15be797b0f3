"""Seed rows the control-plane seed asks for (issue 26): the live-provider smoke fails closed without credentials,
and every start publishes ``starting`` then exactly one of ``ready``/``failed`` on every connection, the typed
``failed`` before the JSON-RPC error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.smoke.fixtures.launch import http_fixture
from testing.daemon_client import ROOT, JsonLinesClient, running_daemon, unix_client
from testing.fixtures import fixture_config, script
from testing.ordering import retired_events, startup_statuses, until_response

pytestmark = pytest.mark.daemon

SMOKE = ROOT / "scripts" / "smoke" / "current_smoke.py"
LIVE_VARIABLES = ("MCP_APP_SERVER_LIVE_URL", "MCP_APP_SERVER_LIVE_TOKEN_ENV", "LIVE_TEST_TOKEN")


def _smoke_live(env: dict[str, str], daemon_log: Path) -> subprocess.CompletedProcess[str]:
    """The smoke with ``--allow-live-provider``; ``daemon_log`` is where a spawned daemon would leave its trace."""
    clean = {k: v for k, v in os.environ.items() if k not in LIVE_VARIABLES}
    return subprocess.run(
        [sys.executable, str(SMOKE), "--allow-live-provider"],
        env={**clean, **env, "TMPDIR": str(daemon_log)},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


@pytest.mark.parametrize(
    ("env", "missing"),
    [
        ({}, "MCP_APP_SERVER_LIVE_URL"),
        ({"MCP_APP_SERVER_LIVE_URL": "http://127.0.0.1:9/mcp"}, "MCP_APP_SERVER_LIVE_TOKEN_ENV"),
        (
            {"MCP_APP_SERVER_LIVE_URL": "http://127.0.0.1:9/mcp", "MCP_APP_SERVER_LIVE_TOKEN_ENV": "LIVE_TEST_TOKEN"},
            "LIVE_TEST_TOKEN",
        ),
    ],
)
def test_live_smoke_without_url_and_credential_fails_before_any_daemon_call(
    tmp_path: Path, env: dict[str, str], missing: str
) -> None:
    done = _smoke_live(env, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert missing in done.stdout and "nothing was run" in done.stdout
    assert not list(tmp_path.iterdir()), "a data dir was made: the smoke went on to spawn the daemon"


def test_live_row_passes_only_with_the_bearer_token_sent(tmp_path: Path) -> None:
    """Against a server that refuses requests without the token, the live row passes: the header was sent."""
    token = {"LIVE_TEST_TOKEN": "live-token-4711"}
    fixture_env = {**os.environ, **token}
    with http_fixture("--require-bearer-env", "LIVE_TEST_TOKEN", env=fixture_env) as url:
        env = {"MCP_APP_SERVER_LIVE_URL": url, "MCP_APP_SERVER_LIVE_TOKEN_ENV": "LIVE_TEST_TOKEN", **token}
        done = _smoke_live(env, tmp_path)
    live_rows = [line for line in done.stdout.splitlines() if line.startswith("live ")]
    assert len(live_rows) == 1 and " PASS " in live_rows[0] and "bearer token" in live_rows[0], done.stdout


def test_every_connection_sees_starting_then_one_ending_and_the_typed_failure_before_the_error(
    data_dir: Path, tmp_path: Path
) -> None:
    socket_path = tmp_path / "d.sock"
    with running_daemon(data_dir, args=("--listen", f"unix:{socket_path}")) as d:
        d.initialize()  # answered once the daemon serves, and it listens from then on
        with unix_client(socket_path) as other:
            other.initialize()
            _start_twice_and_watch(d, other)


def _start_twice_and_watch(d: JsonLinesClient, other: JsonLinesClient) -> None:
    crash = script("crash_at_start.py")
    # disabled, so that the starts watched are the ones asked for (an enabled server starts at create)
    d.request("mcpServer/create", {"name": "good", "config": fixture_config(enabled=False)})
    d.request("mcpServer/create", {"name": "bad", "config": {"command": crash[0], "args": crash[1:], "enabled": False}})
    for name, ending in (("good", "ready"), ("bad", "failed")):
        request = d.start_request("mcpServer/start", {"name": name})
        before, response = until_response(d, request, startup_statuses(name), 60)
        assert [m["params"]["status"] for m in before] == ["starting", ending]
        if ending == "failed":
            failed = before[-1]["params"]
            assert failed["error"]["reason"] == "startupFailed" == response["error"]["data"]["reason"]
        else:
            assert "result" in response
        seen = [other.wait_for(startup_statuses(name), 30)["params"]["status"] for _ in range(2)]
        assert seen == ["starting", ending]
    assert not retired_events(d) and not retired_events(other)
    stray = [p for p in d.notifications("mcpServer/startupStatus/updated") if p["name"] in ("good", "bad")]
    assert not stray, f"more than one ending was published: {stray}"


def test_fixture_refuses_a_request_without_the_bearer_token() -> None:
    """The live test's server really requires the token (else the test above proves nothing)."""
    import httpx2

    env = {**os.environ, "LIVE_TEST_TOKEN": "t0ken-x"}
    with http_fixture("--require-bearer-env", "LIVE_TEST_TOKEN", env=env) as url:
        assert httpx2.post(url, json={}).status_code == 401
