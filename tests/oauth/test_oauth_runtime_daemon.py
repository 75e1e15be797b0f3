"""The shared credential at run time through the real daemon (SPEC §5, §6): a changed authorization server, a
refused refresh seen by every owner at once, and a login's new token in effect everywhere before the host is told."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcp_runtime.oauth.credentials import CredentialStore
from scripts.smoke.fixtures.launch import oauth_fixture
from testing.daemon_client import Daemon, DaemonError, running_daemon
from testing.oauth import TIMEOUT, fixture_stats, login, tool_call, wait_for_expiry

pytestmark = pytest.mark.daemon

STEP_UP_ROUNDS = 20


def create(d: Daemon, url: str, **oauth: Any) -> None:
    d.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": url, "oauth": oauth}})


def call(d: Daemon, thread_id: str, tool: str) -> dict[str, Any]:
    return d.request("mcpServer/tool/call", tool_call(thread_id, tool), timeout=TIMEOUT)  # type: ignore[no-any-return]


def row(d: Daemon, thread_id: str | None = None) -> dict[str, Any]:
    params = {"serverName": "sec"} | ({"threadId": thread_id} if thread_id else {})
    return d.request("mcpServerStatus/list", params)["data"][0]  # type: ignore[no-any-return]


def read_stats(d: Daemon) -> dict[str, Any]:
    """``fixture://stats`` through the management connection (no thread)."""
    return d.request("mcpServer/resource/read", {"server": "sec", "uri": "fixture://stats"})  # type: ignore[no-any-return]


def entry(data_dir: Path, url: str) -> dict[str, Any]:
    return json.loads((data_dir / "credentials.json").read_text())["entries"][f"sec {url}"]  # type: ignore[no-any-return]


def test_a_changed_authorization_server_drops_the_stored_login_before_it_is_used(data_dir: Path) -> None:
    with oauth_fixture() as url, running_daemon(data_dir) as d:
        d.initialize()
        base = url.rsplit("/", 1)[0]
        moved = base.replace("127.0.0.1", "localhost")
        create(d, url, allowedOrigins=[moved])  # the user trusts the new server already: only the move is tested
        assert login(d, "sec")["success"]
        d.request("mcpServer/start", {"name": "sec"}, timeout=TIMEOUT)
        thread_id = d.request("thread/start", {"servers": ["sec"]})["thread"]["id"]
        before = call(d, thread_id, "whoami")["structuredContent"]["clientId"]
        assert entry(data_dir, url)["clientInfo"]["client_id"] == before

        assert httpx2.post(f"{base}/fixture/migrate").status_code == 200
        with pytest.raises(DaemonError) as err:
            call(d, thread_id, "whoami")
        assert (err.value.code, err.value.reason) == (-32016, "authRequired")
        stored = entry(data_dir, url)
        assert not {"tokens", "clientInfo", "metadata"} & set(stored)
        for status in (row(d), row(d, thread_id)):  # every owner's row, at once
            assert (status["runtimeStatus"], status["authStatus"]) == ("authenticationRequired", "notLoggedIn")
            assert status["lastError"]["reason"] == "authRequired"

        started = d.request("mcpServer/oauth/login", {"name": "sec"}, timeout=TIMEOUT)
        assert started["authorizationUrl"].startswith(moved + "/")
        assert httpx2.get(httpx2.get(started["authorizationUrl"]).headers["location"]).status_code == 200
        done = d.wait_notification("mcpServer/oauthLogin/completed", lambda p: p["loginId"] == started["loginId"],
                                   timeout=TIMEOUT)
        assert done["success"] is True
        after = call(d, thread_id, "whoami")["structuredContent"]["clientId"]
        assert after != before  # registered again, with the new server
        stats = fixture_stats(d, thread_id)
        assert stats["registrations"] == 2
        assert stats["staleClientRequests"] == 0  # nothing was ever sent with the old registration after the move
        assert stats["refreshes"] == 0
        assert row(d)["runtimeStatus"] == "connected"


def test_a_refused_refresh_shows_in_every_owners_row_at_once(data_dir: Path) -> None:
    with oauth_fixture("--token-ttl", "1") as url, running_daemon(data_dir) as d:
        d.initialize()
        create(d, url)
        assert login(d, "sec")["success"]
        d.request("mcpServer/start", {"name": "sec"}, timeout=TIMEOUT)
        first, second = (d.request("thread/start", {"servers": ["sec"]})["thread"]["id"] for _ in range(2))
        for thread_id in (first, second):
            assert call(d, thread_id, "whoami")["structuredContent"]["subject"] == "fixture-user"
        assert row(d)["runtimeStatus"] == "connected"

        # The authorization server forgets the refresh token (revoked); the access token runs out.
        CredentialStore(data_dir).update(
            "sec", url, lambda e: {**e, "tokens": {**e["tokens"], "refresh_token": "rt-revoked"}}
        )
        wait_for_expiry(data_dir)
        with pytest.raises(DaemonError) as err:
            call(d, first, "whoami")
        assert err.value.reason == "reauthenticationRequired"
        for status in (row(d), row(d, first), row(d, second)):
            assert status["runtimeStatus"] == "authenticationRequired", status
            assert status["authStatus"] == "notLoggedIn"
            assert status["lastError"]["reason"] == "reauthenticationRequired"
        assert "tokens" not in entry(data_dir, url)
        with pytest.raises(DaemonError) as err:
            call(d, second, "whoami")
        assert err.value.reason == "reauthenticationRequired"

        assert login(d, "sec")["success"]
        for thread_id in (first, second):
            assert call(d, thread_id, "whoami")["structuredContent"]["subject"] == "fixture-user"
        assert (row(d)["runtimeStatus"], row(d)["authStatus"]) == ("connected", "oAuth")


def test_a_step_up_login_is_in_effect_on_every_connection_before_it_is_announced(data_dir: Path) -> None:
    """Step-up, then the very next call, many times: the call never meets the token from before the login."""
    with oauth_fixture() as url, running_daemon(data_dir) as d:
        d.initialize()
        create(d, url)
        assert login(d, "sec", scopes=["mcp"])["success"]
        d.request("mcpServer/start", {"name": "sec"}, timeout=TIMEOUT)
        thread_id = d.request("thread/start", {"servers": ["sec"]})["thread"]["id"]
        for _ in range(STEP_UP_ROUNDS):
            with pytest.raises(DaemonError) as err:
                call(d, thread_id, "admin")
            assert err.value.reason == "insufficientScope"
            assert login(d, "sec")["success"]  # no scopes named: the challenged ones with the previous ones
            # The management connection is back too, with the new token: a read through it works at once.
            assert row(d)["runtimeStatus"] == "connected"
            assert json.loads(read_stats(d)["contents"][0]["text"])["refreshes"] == 0
            assert call(d, thread_id, "admin")["content"][0]["text"] == "admin ok"
            assert login(d, "sec", scopes=["mcp"])["success"]  # back to the narrow token for the next round
