"""OAuth through the real daemon against the SDK-auth fixture; the test plays the browser."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.smoke.fixtures.launch import oauth_fixture
from testing.daemon_client import Daemon, DaemonError, running_daemon, unix_client
from testing.oauth import browse, login, stored_tokens

pytestmark = pytest.mark.daemon


@pytest.fixture
def oauth_url() -> Iterator[str]:
    with oauth_fixture("--token-ttl", "2") as url:
        yield url


def test_start_before_login_fails_closed(daemon: Daemon, oauth_url: str) -> None:
    daemon.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": oauth_url, "oauth": {}}})
    with pytest.raises(DaemonError) as err:
        daemon.request("mcpServer/start", {"name": "sec"}, timeout=60)
    assert (err.value.code, err.value.reason) == (-32016, "authRequired")
    failed = daemon.notifications("mcpServer/startupStatus/updated")[-1]
    assert failed["status"] == "failed" and failed["failureReason"] == "reauthenticationRequired"
    status = daemon.request("mcpServerStatus/list")["data"][0]
    assert status["runtimeStatus"] == "authenticationRequired" and status["authStatus"] == "notLoggedIn"


def test_login_completes_to_every_connection_and_the_server_reconnects(
    data_dir: Path, tmp_path: Path, oauth_url: str
) -> None:
    socket_path = tmp_path / "d.sock"
    with running_daemon(data_dir, args=("--listen", f"unix:{socket_path}")) as d:
        d.initialize()
        d.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": oauth_url, "oauth": {}}})
        with pytest.raises(DaemonError):
            d.request("mcpServer/start", {"name": "sec"}, timeout=60)
        with unix_client(socket_path) as other:
            other.initialize()
            started = d.request("mcpServer/oauth/login", {"name": "sec"}, timeout=60)
            assert started["authorizationUrl"].startswith("http://127.0.0.1") and started["loginId"]
            assert browse(started["authorizationUrl"]).status_code == 200
            for client in (d, other):
                done = client.wait_notification("mcpServer/oauthLogin/completed", timeout=60)
                assert done == {"name": "sec", "loginId": started["loginId"], "threadId": None, "success": True,
                                "error": None}
        d.wait_notification("mcpServer/startupStatus/updated", lambda p: p["name"] == "sec" and p["status"] == "ready",
                            timeout=60)
        status = d.request("mcpServerStatus/list")["data"][0]
        assert status["runtimeStatus"] == "connected" and status["authStatus"] == "oAuth"
        assert {"whoami", "echo"} <= set(status["tools"])
        tokens = stored_tokens(data_dir)
        assert tokens
        visible = json.dumps(d.request("mcpServer/list")) + json.dumps(d.request("mcpServerStatus/list"))
        log = d.stderr()
        for token in tokens:
            assert token not in visible and token not in log
        assert "code=" not in log and started["authorizationUrl"] not in log
    assert (data_dir / "credentials.json").stat().st_mode & 0o777 == 0o600


def test_restart_reuses_tokens_and_refreshes_after_expiry(data_dir: Path, oauth_url: str) -> None:
    with running_daemon(data_dir) as d:
        d.initialize()
        d.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": oauth_url, "oauth": {}}})
        assert login(d, "sec")["success"]
    before = stored_tokens(data_dir)
    expires_at = max(e.get("expiresAt") or 0 for e in json.loads(
        (data_dir / "credentials.json").read_text())["entries"].values())
    while time.time() <= expires_at + 0.2:  # the access token must really have expired (2 s lifetime)
        time.sleep(0.1)
    with running_daemon(data_dir) as d:
        d.initialize()
        d.wait_notification("mcpServer/startupStatus/updated", lambda p: p["status"] in ("ready", "failed"),
                            timeout=60)
        status = d.request("mcpServerStatus/list")["data"][0]
        assert status["runtimeStatus"] == "connected", status
    assert stored_tokens(data_dir) != before


def test_a_changed_url_never_gets_the_old_token(daemon: Daemon, oauth_url: str) -> None:
    daemon.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": oauth_url, "oauth": {}}})
    assert login(daemon, "sec")["success"]
    other = oauth_url.replace("/mcp", "/mcp/")
    daemon.request("mcpServer/update", {"name": "sec", "config": {"type": "http", "url": other, "oauth": {}}})
    with pytest.raises(DaemonError) as err:
        daemon.request("mcpServer/start", {"name": "sec"}, timeout=60)
    assert err.value.reason == "authRequired"


def test_denied_login_and_timeout_complete_with_failure(daemon: Daemon) -> None:
    with oauth_fixture("--deny") as url:
        daemon.request("mcpServer/create", {"name": "deny", "config": {"type": "http", "url": url, "oauth": {}}})
        done = login(daemon, "deny")
        assert done["success"] is False and done["error"]["reason"] == "oauthFailed"
    with oauth_fixture() as url:
        daemon.request("mcpServer/create", {"name": "slow", "config": {"type": "http", "url": url, "oauth": {}}})
        started = daemon.request("mcpServer/oauth/login", {"name": "slow", "timeoutSecs": 1}, timeout=60)
        done = daemon.wait_notification("mcpServer/oauthLogin/completed",
                                        lambda p: p["loginId"] == started["loginId"], timeout=30)
        assert done["success"] is False and done["error"]["reason"] == "timeout"


def test_second_login_cancels_the_first(daemon: Daemon, oauth_url: str) -> None:
    daemon.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": oauth_url, "oauth": {}}})
    first = daemon.request("mcpServer/oauth/login", {"name": "sec"}, timeout=60)
    second = daemon.request("mcpServer/oauth/login", {"name": "sec"}, timeout=60)
    cancelled = daemon.wait_notification("mcpServer/oauthLogin/completed", lambda p: p["loginId"] == first["loginId"])
    assert cancelled["success"] is False and cancelled["error"]["reason"] == "cancelled"
    browse(second["authorizationUrl"])
    done = daemon.wait_notification("mcpServer/oauthLogin/completed", lambda p: p["loginId"] == second["loginId"],
                                    timeout=60)
    assert done["success"] is True
    assert len(daemon.notifications("mcpServer/oauthLogin/completed")) == 0


def test_login_needs_an_oauth_server(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "plain", "config": {"command": "x"}})
    with pytest.raises(DaemonError) as err:
        daemon.request("mcpServer/oauth/login", {"name": "plain"})
    assert err.value.reason == "unsupported"
    with pytest.raises(DaemonError) as err:
        daemon.request("mcpServer/oauth/login", {"name": "plain", "timeoutSecs": 601})
    assert err.value.reason == "invalidParams"


def test_allowed_origins_pin_the_authorization_server(daemon: Daemon) -> None:
    with oauth_fixture("--issuer-host", "localhost") as url:
        for name, oauth in (("pinned", {"allowedOrigins": []}), ("absent", {})):
            daemon.request("mcpServer/create", {"name": name, "config": {"type": "http", "url": url, "oauth": oauth}})
            with pytest.raises(DaemonError) as err:
                daemon.request("mcpServer/oauth/login", {"name": name}, timeout=60)
            assert (err.value.code, err.value.reason) == (-32012, "originNotAllowed")
            assert err.value.data["origin"].startswith("http://localhost:")
        assert daemon.notifications("mcpServer/oauthLogin/completed") == []
