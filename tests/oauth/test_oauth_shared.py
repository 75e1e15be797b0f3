"""One OAuth credential per server + URL through the real daemon: threads and the management view across many
token expiries with rotating refresh tokens, step-up, origin consent, pre-registered and machine clients.

The OAuth fixture issues short-lived access tokens and rotating refresh tokens, and counts a spent refresh
token presented again. Waiting for expiry polls the clock until the stored expiry has passed (a condition,
not a race): the fixture's own expiry is never later than the one the daemon stored.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest

from scripts.smoke.fixtures.launch import oauth_fixture
from testing.daemon_client import Daemon, DaemonError, running_daemon
from testing.oauth import TIMEOUT, browse, fixture_stats, free_port, login, tool_call, wait_for_expiry

pytestmark = pytest.mark.daemon

ROUNDS = 6


def wait_ready(d: Daemon, name: str, thread_id: str | None) -> None:
    d.wait_notification(
        "mcpServer/startupStatus/updated",
        lambda p: p["name"] == name and p["threadId"] == thread_id and p["status"] == "ready",
        timeout=TIMEOUT,
    )


def test_two_threads_and_the_management_view_share_one_credential_across_expiries(data_dir: Path) -> None:
    with oauth_fixture("--token-ttl", "1") as url, running_daemon(data_dir) as d:
        d.initialize()
        d.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": url, "oauth": {}}})
        assert login(d, "sec")["success"]
        d.request("mcpServer/start", {"name": "sec"}, timeout=TIMEOUT)
        threads = [d.request("thread/start", {"name": f"t{i}", "servers": ["sec"]})["thread"]["id"] for i in (1, 2)]
        for thread_id in threads:
            wait_ready(d, "sec", thread_id)
        for round_ in range(ROUNDS):
            wait_for_expiry(data_dir)
            pending = [
                d.start_request("mcpServer/tool/call", tool_call(t, "echo", {"text": f"{round_}-{t}"})) for t in threads
            ]
            pending.append(d.start_request("mcpServer/resource/read", {"server": "sec", "uri": "fixture://stats"}))
            responses = [d.wait_response(request_id, timeout=TIMEOUT) for request_id in pending]
            for thread_id, response in zip(threads, responses, strict=False):
                assert "error" not in response, response
                assert response["result"]["content"][0]["text"] == f"{round_}-{thread_id}"
            assert "error" not in responses[-1], responses[-1]
        stats = fixture_stats(d, threads[0])
        assert stats["reusedRefreshTokens"] == 0
        assert stats["refreshes"] >= ROUNDS
        statuses = d.request("mcpServerStatus/list")["data"]
        assert [s["runtimeStatus"] for s in statuses if s["name"] == "sec"] == ["connected"]


def test_a_failed_refresh_shows_at_once_and_the_thread_waits_for_a_login(data_dir: Path) -> None:
    """SPEC §6: a settings page must never show a healthy server whose calls fail for want of a login."""
    from mcp_runtime.oauth import CredentialStore

    with oauth_fixture("--token-ttl", "1") as url, running_daemon(data_dir) as d:
        d.initialize()
        d.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": url, "oauth": {}}})
        assert login(d, "sec")["success"]
        thread_id = d.request("thread/start", {"name": "t", "servers": ["sec"]})["thread"]["id"]
        wait_ready(d, "sec", thread_id)
        spent = {"refresh_token": "rt-the-server-never-issued"}
        CredentialStore(data_dir).update("sec", url, lambda e: {**e, "tokens": {**e["tokens"], **spent}})
        wait_for_expiry(data_dir)
        for _ in range(2):  # the second call is not a reconnect: only a login can help
            with pytest.raises(DaemonError) as err:
                d.request("mcpServer/tool/call", tool_call(thread_id, "echo", {"text": "x"}), timeout=TIMEOUT)
            assert err.value.reason == "reauthenticationRequired"
            row = d.request("mcpServerStatus/list", {"threadId": thread_id})["data"][0]
            assert row["runtimeStatus"] == "authenticationRequired", row
            assert row["lastError"]["reason"] == "reauthenticationRequired"
        starts = [
            p for p in d.notifications("mcpServer/startupStatus/updated")
            if p["threadId"] == thread_id and p["status"] == "starting"
        ]
        assert len(starts) == 1


def test_step_up_login_asks_for_the_challenged_scopes(data_dir: Path) -> None:
    with oauth_fixture() as url, running_daemon(data_dir) as d:
        d.initialize()
        d.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": url, "oauth": {}}})
        assert login(d, "sec")["success"]
        thread_id = d.request("thread/start", {"name": "t", "servers": ["sec"]})["thread"]["id"]
        with pytest.raises(DaemonError) as err:
            d.request("mcpServer/tool/call", tool_call(thread_id, "admin"), timeout=TIMEOUT)
        assert (err.value.code, err.value.reason) == (-32016, "insufficientScope")
        assert err.value.data["requiredScopes"] == ["mcp", "extra"]
        # The host logs in again without naming scopes: the login asks for the old ones and the challenged ones.
        started = d.request("mcpServer/oauth/login", {"name": "sec"}, timeout=TIMEOUT)
        asked = parse_qs(urlsplit(started["authorizationUrl"]).query)["scope"][0].split()
        assert sorted(asked) == ["extra", "mcp"]
        browse(started["authorizationUrl"])
        done = d.wait_notification(
            "mcpServer/oauthLogin/completed", lambda p: p["loginId"] == started["loginId"], timeout=TIMEOUT
        )
        assert done["success"] is True
        result = d.request("mcpServer/tool/call", tool_call(thread_id, "admin"), timeout=TIMEOUT)
        assert result["content"][0]["text"] == "admin ok"
        who = d.request("mcpServer/tool/call", tool_call(thread_id, "whoami"), timeout=TIMEOUT)
        assert sorted(who["structuredContent"]["scopes"]) == ["extra", "mcp"]


def test_a_foreign_authorization_server_needs_consent(daemon: Daemon) -> None:
    with oauth_fixture("--issuer-host", "localhost") as url:
        config: dict[str, Any] = {"type": "http", "url": url, "oauth": {}}
        daemon.request("mcpServer/create", {"name": "sec", "config": config})
        with pytest.raises(DaemonError) as err:
            daemon.request("mcpServer/oauth/login", {"name": "sec"}, timeout=TIMEOUT)
        assert (err.value.code, err.value.reason) == (-32012, "originNotAllowed")
        origin = err.value.data["origin"]
        assert origin == "http://localhost:" + url.split(":")[2].split("/")[0]
        assert daemon.notifications("mcpServer/oauthLogin/completed") == []
        # The host asks the user, adds the origin (consent) and retries.
        config["oauth"] = {"allowedOrigins": [origin]}
        daemon.request("mcpServer/update", {"name": "sec", "config": config})
        assert login(daemon, "sec")["success"] is True
        daemon.request("mcpServer/start", {"name": "sec"}, timeout=TIMEOUT)


def test_pre_registered_client_logs_in_against_a_strict_server(data_dir: Path) -> None:
    """The fixture matches redirect URIs exactly, as the SDK's authorization server does: the client registered
    ``http://127.0.0.1:<callbackPort>/oauth/callback`` in advance, and only a login on that port gets through."""
    secret = "pre-registered-" + os.urandom(8).hex()
    port = free_port()
    env = {**os.environ, "APP_OAUTH_SECRET": secret}
    env.pop("UNSET_OAUTH_SECRET", None)
    redirect = f"http://127.0.0.1:{port}/oauth/callback"
    with (
        oauth_fixture(
            "--no-registration", "--client", f"app:{secret}", "--client-redirect-uri", redirect, "--token-ttl", "1"
        ) as url,
        running_daemon(data_dir, env=env) as d,
    ):
        d.initialize()
        with pytest.raises(DaemonError) as err:
            d.request(
                "mcpServer/create",
                {
                    "name": "inline",
                    "config": {"type": "http", "url": url, "oauth": {"clientId": "app", "clientSecret": secret}},
                },
            )
        assert (err.value.code, err.value.reason) == (-32012, "inlineSecret")
        unset = {"type": "http", "url": url, "oauth": {"clientId": "app", "clientSecretEnvVar": "UNSET_OAUTH_SECRET"}}
        d.request("mcpServer/create", {"name": "unset", "config": unset})
        with pytest.raises(DaemonError) as err:
            d.request("mcpServer/oauth/login", {"name": "unset"}, timeout=TIMEOUT)
        assert (err.value.code, err.value.reason) == (-32012, "missingEnvVar")

        # Without callbackPort the redirect URI has a port of the moment: the strict server refuses it.
        anywhere = {"type": "http", "url": url, "oauth": {"clientId": "app", "clientSecretEnvVar": "APP_OAUTH_SECRET"}}
        d.request("mcpServer/create", {"name": "anywhere", "config": anywhere})
        started = d.request("mcpServer/oauth/login", {"name": "anywhere", "timeoutSecs": 2}, timeout=TIMEOUT)
        redirect_uri = parse_qs(urlsplit(started["authorizationUrl"]).query)["redirect_uri"][0]
        assert redirect_uri != redirect and redirect_uri.endswith("/oauth/callback")
        assert httpx2.get(started["authorizationUrl"], follow_redirects=False).status_code == 400
        done = d.wait_notification("mcpServer/oauthLogin/completed", lambda p: p["loginId"] == started["loginId"],
                                   timeout=TIMEOUT)
        assert done["success"] is False and done["error"]["reason"] == "timeout"

        config = {"type": "http", "url": url,
                  "oauth": {"clientId": "app", "clientSecretEnvVar": "APP_OAUTH_SECRET", "callbackPort": port}}
        d.request("mcpServer/create", {"name": "sec", "config": config})
        started = d.request("mcpServer/oauth/login", {"name": "sec"}, timeout=TIMEOUT)
        assert parse_qs(urlsplit(started["authorizationUrl"]).query)["redirect_uri"] == [redirect]
        assert browse(started["authorizationUrl"]).status_code == 200
        done = d.wait_notification("mcpServer/oauthLogin/completed", lambda p: p["loginId"] == started["loginId"],
                                   timeout=TIMEOUT)
        assert done["success"] is True
        thread_id = d.request("thread/start", {"name": "t", "servers": ["sec"]})["thread"]["id"]
        who = d.request("mcpServer/tool/call", tool_call(thread_id, "whoami"), timeout=TIMEOUT)
        assert who["structuredContent"]["clientId"] == "app"
        wait_for_expiry(data_dir)  # the refresh authenticates with the secret from the environment
        assert d.request("mcpServer/tool/call", tool_call(thread_id, "echo", {"text": "x"}), timeout=TIMEOUT)
        assert fixture_stats(d, thread_id)["refreshes"] >= 1
        assert secret not in (data_dir / "credentials.json").read_text()
        assert secret not in d.stderr()


def test_machine_client_fetches_tokens_without_a_login(data_dir: Path) -> None:
    secret = "machine-" + os.urandom(8).hex()
    env = {**os.environ, "BOT_OAUTH_SECRET": secret}
    with (
        oauth_fixture("--machine-client", f"bot:{secret}", "--token-ttl", "1") as url,
        running_daemon(data_dir, env=env) as d,
    ):
        d.initialize()
        issuer = url.rsplit("/", 1)[0] + "/"
        oauth = {
            "grant": "clientCredentials",
            "clientId": "bot",
            "clientSecretEnvVar": "BOT_OAUTH_SECRET",
            "expectedIssuer": issuer,
            "scopes": ["mcp"],
        }
        d.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": url, "oauth": oauth}})
        with pytest.raises(DaemonError) as err:
            d.request("mcpServer/oauth/login", {"name": "sec"})
        assert err.value.reason == "unsupported"
        d.request("mcpServer/start", {"name": "sec"}, timeout=TIMEOUT)
        thread_id = d.request("thread/start", {"name": "t", "servers": ["sec"]})["thread"]["id"]
        for _ in range(3):
            wait_for_expiry(data_dir)
            who = d.request("mcpServer/tool/call", tool_call(thread_id, "whoami"), timeout=TIMEOUT)
            assert who["structuredContent"]["clientId"] == "bot"
        assert fixture_stats(d, thread_id)["clientCredentialsTokens"] >= 3
        status = next(s for s in d.request("mcpServerStatus/list")["data"] if s["name"] == "sec")
        assert status["authStatus"] == "oAuth" and status["runtimeStatus"] == "connected"
        assert secret not in (data_dir / "credentials.json").read_text() and secret not in d.stderr()

        wrong = {**oauth, "expectedIssuer": "http://localhost:1/"}
        d.request("mcpServer/create", {"name": "wrong", "config": {"type": "http", "url": url, "oauth": wrong}})
        with pytest.raises(DaemonError) as err:
            d.request("mcpServer/start", {"name": "wrong"}, timeout=TIMEOUT)
        assert err.value.reason == "oauthFailed"
        unset = {**oauth, "clientSecretEnvVar": "UNSET_BOT_SECRET"}
        d.request("mcpServer/create", {"name": "unset", "config": {"type": "http", "url": url, "oauth": unset}})
        with pytest.raises(DaemonError) as err:
            d.request("mcpServer/start", {"name": "unset"}, timeout=TIMEOUT)
        assert (err.value.code, err.value.reason) == (-32012, "missingEnvVar")
