"""Sender-constrained tokens (DPoP, SPEC §5) through the real daemon against the OAuth fixture, whose servers check
every proof as a real one would: a bound login, the nonce challenge of each server, a refresh and a step-up with
DPoP, ``required`` against a server without DPoP, ``never``, a machine client the resource asks for DPoP, and no
key, proof or token in any answer, log line or trace record."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_runtime.oauth.dpop import DPoPKey
from scripts.smoke.fixtures.launch import oauth_fixture
from testing.daemon_client import Daemon, DaemonError, running_daemon
from testing.oauth import (
    TIMEOUT,
    Shown,
    browse,
    fixture_get,
    fixture_origin,
    fixture_post,
    login,
    tool_call,
    wait_for_expiry,
)

pytestmark = pytest.mark.daemon


@pytest.fixture
def shown(data_dir: Path, tmp_path: Path) -> Iterator[Shown]:
    trace = tmp_path / "trace.jsonl"
    with running_daemon(data_dir, env={**os.environ, "BOT_SECRET": "bot-secret-value-1234"},
                        args=("--trace", str(trace))) as d:
        d.initialize()
        yield Shown(d, trace)


def entry_of(data_dir: Path) -> dict[str, Any]:
    entries = json.loads((data_dir / "credentials.json").read_text())["entries"]
    assert len(entries) == 1
    return next(iter(entries.values()))  # type: ignore[no-any-return]


def call(shown: Shown, thread_id: str, tool: str, **arguments: Any) -> dict[str, Any]:
    return shown.request("mcpServer/tool/call", tool_call(thread_id, tool, arguments))  # type: ignore[no-any-return]


def logged_in_thread(d: Daemon, shown: Shown, url: str, **oauth: Any) -> str:
    shown.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": url, "oauth": oauth}})
    done = login(d, "sec")
    assert done["success"] is True, done
    return str(shown.request("thread/start", {"servers": ["sec"]})["thread"]["id"])


def test_a_dpop_login_binds_the_tokens_and_every_request_proves_the_key(
    shown: Shown, data_dir: Path
) -> None:
    d = shown.daemon
    with oauth_fixture("--dpop") as url:
        thread_id = logged_in_thread(d, shown, url)
        for text in ("one", "two"):
            assert call(shown, thread_id, "echo", text=text)["content"][0]["text"] == text
        stats = fixture_get(url, "stats")
        seen = fixture_get(url, "seen")
    entry = entry_of(data_dir)
    assert entry["tokenType"] == "DPoP"
    key = DPoPKey.from_pem(entry["dpopKey"])
    assert key is not None  # an ES256 key the daemon made, kept with the tokens
    assert (data_dir / "credentials.json").stat().st_mode & 0o777 == 0o600
    assert stats["dpopTokens"] == 1 and stats["dpopRequests"] >= 3  # the login's check, the session, two calls
    assert (stats["bearerRequests"], stats["invalidProofs"], seen["replayedProofs"]) == (0, 0, 0)
    pem_body = "".join(entry["dpopKey"].splitlines()[1:-1])
    secrets = [pem_body[:48], pem_body[-48:], entry["tokens"]["access_token"], entry["tokens"]["refresh_token"],
               *seen["proofs"]]
    assert shown.leaked(secrets) == []
    listed = shown.request("mcpServer/list")["data"][0]["config"]
    assert "dpopKey" not in json.dumps(listed)


def test_a_nonce_challenge_from_each_server_is_answered_once_and_is_not_an_expired_token(
    shown: Shown, data_dir: Path
) -> None:
    d = shown.daemon
    with oauth_fixture("--dpop-nonce") as url:
        thread_id = logged_in_thread(d, shown, url)
        after_login = fixture_get(url, "stats")
        assert after_login["asNonceChallenges"] == 1  # the code exchange, retried with the AS nonce
        assert call(shown, thread_id, "echo", text="a")["content"][0]["text"] == "a"
        first = fixture_get(url, "stats")
        assert first["rsNonceChallenges"] >= 1
        fixture_post(url, "rotate-nonces")  # the resource server asks again, with a new nonce
        assert call(shown, thread_id, "echo", text="b")["content"][0]["text"] == "b"
        second = fixture_get(url, "stats")
        access = entry_of(data_dir)["tokens"]["access_token"]
        status = shown.request("mcpServerStatus/list", {"serverName": "sec"})["data"][0]  # while the server serves
    assert second["rsNonceChallenges"] == first["rsNonceChallenges"] + 1
    assert second["refreshes"] == 0 and second["invalidProofs"] == 0  # no refresh for a nonce, no login lost
    assert entry_of(data_dir)["tokens"]["access_token"] == access
    assert status["authStatus"] == "oAuth" and "lastError" not in status
    assert shown.leaked([access]) == []


def test_a_refresh_with_dpop_proves_the_same_key_and_answers_the_servers_new_nonce(
    shown: Shown, data_dir: Path
) -> None:
    d = shown.daemon
    with oauth_fixture("--dpop-nonce", "--token-ttl", "2") as url:
        thread_id = logged_in_thread(d, shown, url)
        assert call(shown, thread_id, "whoami")["structuredContent"]["subject"] == "fixture-user"
        before, key = fixture_get(url, "stats"), entry_of(data_dir)["dpopKey"]
        fixture_post(url, "rotate-nonces")  # the refresh meets a use_dpop_nonce answer of its own
        wait_for_expiry(data_dir)
        assert call(shown, thread_id, "whoami")["structuredContent"]["subject"] == "fixture-user"
        after = fixture_get(url, "stats")
    entry = entry_of(data_dir)
    assert after["refreshes"] == 1 and after["reusedRefreshTokens"] == 0
    assert after["asNonceChallenges"] == before["asNonceChallenges"] + 1
    assert after["dpopTokens"] == 2 and after["invalidProofs"] == 0  # a bound refresh token, proved by the same key
    assert (entry["dpopKey"], entry["tokenType"]) == (key, "DPoP")


def test_a_step_up_with_dpop_logs_in_again_for_the_challenged_scope(shown: Shown) -> None:
    d = shown.daemon
    with oauth_fixture("--dpop") as url:
        thread_id = logged_in_thread(d, shown, url, scopes=["mcp"])
        with pytest.raises(DaemonError) as err:
            call(shown, thread_id, "admin")
        assert (err.value.reason, err.value.data["requiredScopes"]) == ("insufficientScope", ["mcp", "extra"])
        started = shown.request("mcpServer/oauth/login", {"name": "sec"})
        assert "extra" in started["authorizationUrl"]  # the challenged scope joins the previous ones
        browse(started["authorizationUrl"])
        done = d.wait_notification("mcpServer/oauthLogin/completed", lambda p: p["loginId"] == started["loginId"],
                                   timeout=TIMEOUT)
        assert done["success"] is True
        assert call(shown, thread_id, "admin")["content"][0]["text"] == "admin ok"
        stats = fixture_get(url, "stats")
    assert stats["dpopTokens"] == 2 and stats["bearerRequests"] == 0 and stats["invalidProofs"] == 0


def test_required_dpop_against_a_server_without_it_fails_before_the_user_signs_in(
    shown: Shown, data_dir: Path
) -> None:
    d = shown.daemon
    with oauth_fixture("--machine-client", "bot:bot-secret-value-1234") as url:
        config = {"type": "http", "url": url, "oauth": {"dpop": "required"}}
        shown.request("mcpServer/create", {"name": "sec", "config": config})
        with pytest.raises(DaemonError) as err:
            shown.request("mcpServer/oauth/login", {"name": "sec"})
        assert (err.value.code, err.value.reason, err.value.data["step"]) == (-32016, "oauthFailed", "dpop")
        machine = {"grant": "clientCredentials", "clientId": "bot", "clientSecretEnvVar": "BOT_SECRET",
                   "expectedIssuer": fixture_origin(url), "dpop": "required"}
        shown.request("mcpServer/create", {"name": "bot", "config": {"type": "http", "url": url, "oauth": machine}})
        with pytest.raises(DaemonError) as err:
            shown.request("mcpServer/start", {"name": "bot"})
        assert (err.value.reason, err.value.data["step"]) == ("oauthFailed", "dpop")
        assert fixture_get(url, "stats")["clientCredentialsTokens"] == 0  # nothing was asked without a proof
    assert d.notifications("mcpServer/oauthLogin/completed") == []
    assert not (data_dir / "credentials.json").exists() or "tokens" not in (data_dir / "credentials.json").read_text()
    assert shown.leaked(["bot-secret-value-1234"]) == []


def test_never_sends_no_proof_so_a_server_that_requires_dpop_refuses_the_login(
    shown: Shown, data_dir: Path
) -> None:
    d = shown.daemon
    with oauth_fixture("--dpop") as url:
        shown.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": url,
                                                                    "oauth": {"dpop": "never"}}})
        done = login(d, "sec")
        stats = fixture_get(url, "stats")
    assert done["success"] is False and done["error"]["reason"] == "oauthFailed"
    assert stats["dpopTokens"] == 0 and stats["bearerRequests"] == 1  # the new Bearer token, refused
    path = data_dir / "credentials.json"
    assert not path.exists() or "dpopKey" not in path.read_text()  # no key made, and a failed login keeps nothing


def test_a_machine_client_binds_its_token_once_the_resource_asks_for_dpop(
    shown: Shown, data_dir: Path
) -> None:
    with oauth_fixture("--dpop", "--machine-client", "bot:bot-secret-value-1234", "--token-ttl", "2") as url:
        machine = {"grant": "clientCredentials", "clientId": "bot", "clientSecretEnvVar": "BOT_SECRET",
                   "expectedIssuer": fixture_origin(url)}
        shown.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": url, "oauth": machine}})
        shown.request("mcpServer/start", {"name": "sec"})
        thread_id = shown.request("thread/start", {"servers": ["sec"]})["thread"]["id"]
        assert call(shown, thread_id, "whoami")["structuredContent"]["clientId"] == "bot"
        first = fixture_get(url, "stats")
        wait_for_expiry(data_dir)  # the next token is fetched with a proof from the start
        assert call(shown, thread_id, "whoami")["structuredContent"]["clientId"] == "bot"
        second = fixture_get(url, "stats")
    # The first token was Bearer (nothing had asked for DPoP yet); the resource's DPoP challenge got a bound one.
    assert (first["clientCredentialsTokens"], first["dpopTokens"], first["bearerRequests"]) == (2, 1, 1)
    assert (second["clientCredentialsTokens"], second["dpopTokens"], second["bearerRequests"]) == (3, 2, 1)
    assert entry_of(data_dir)["tokenType"] == "DPoP"
    assert shown.leaked(["bot-secret-value-1234", entry_of(data_dir)["tokens"]["access_token"]]) == []
