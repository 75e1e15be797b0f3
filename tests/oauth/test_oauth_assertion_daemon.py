"""Enterprise-managed authorization (SEP-990) and workload identity (SEP-1933) through the real daemon against the
OAuth fixture's IdP and jwt-bearer grant: no browser, the kept credential read again for each token (a rotated file
is what the next exchange uses), a refusal typed and never answered by sending the same credential again, and no
ID token, ID-JAG, workload JWT or secret in any answer, log line or trace record."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scripts.smoke.fixtures.launch import oauth_fixture
from testing.daemon_client import DaemonError, running_daemon
from testing.oauth import (
    Shown,
    fixture_get,
    fixture_origin,
    id_token,
    pem_pair,
    tool_call,
    wait_for_expiry,
    workload_jwt,
    write_rotated,
)

pytestmark = pytest.mark.daemon

IDP_KEY = "idp-signing-key-of-the-fixture-0123456789"
APP_SECRET = "app-client-secret-5678"
IDP = ("--idp", f"desktop:{IDP_KEY}", "--jag-client", f"app:{APP_SECRET}")


@pytest.fixture
def shown(data_dir: Path, tmp_path: Path) -> Iterator[Shown]:
    trace = tmp_path / "trace.jsonl"
    args = ("--trace", str(trace), "--credential-dir", str(tmp_path))  # the host keeps its credentials there
    with running_daemon(data_dir, env={**os.environ, "APP_SECRET": APP_SECRET}, args=args) as d:
        d.initialize()
        yield Shown(d, trace)


def enterprise(url: str, id_token_file: Path, **changes: Any) -> dict[str, Any]:
    oauth = {"grant": "identityAssertion", "clientId": "app", "clientSecretEnvVar": "APP_SECRET",
             "expectedIssuer": fixture_origin(url), "scopes": ["mcp"],
             "idp": {"tokenEndpoint": f"{fixture_origin(url)}/idp/token", "clientId": "desktop",
                     "idTokenFile": str(id_token_file)}}
    return {"type": "http", "url": url, "oauth": {**oauth, **changes}}


def whoami(shown: Shown, thread_id: str) -> dict[str, Any]:
    result = shown.request("mcpServer/tool/call", tool_call(thread_id, "whoami"))
    return result["structuredContent"]  # type: ignore[no-any-return]


def started_thread(shown: Shown, config: dict[str, Any]) -> str:
    shown.request("mcpServer/create", {"name": "sec", "config": config})
    shown.request("mcpServer/start", {"name": "sec"})
    return str(shown.request("thread/start", {"servers": ["sec"]})["thread"]["id"])


def start_refused(shown: Shown) -> DaemonError:
    with pytest.raises(DaemonError) as err:
        shown.request("mcpServer/start", {"name": "sec"})
    return err.value


def test_the_users_id_token_is_exchanged_without_a_browser_and_read_again_for_the_next_exchange(
    shown: Shown, data_dir: Path, tmp_path: Path
) -> None:
    id_token_file = tmp_path / "sso" / "id_token"
    id_token_file.parent.mkdir()
    alice, bob = id_token(IDP_KEY, "desktop", "alice"), id_token(IDP_KEY, "desktop", "bob")
    write_rotated(id_token_file, alice)
    with oauth_fixture(*IDP, "--token-ttl", "2") as url:
        thread_id = started_thread(shown, enterprise(url, id_token_file))
        assert whoami(shown, thread_id) == {"clientId": "app", "subject": "alice", "scopes": ["mcp"]}
        with pytest.raises(DaemonError) as err:
            shown.request("mcpServer/oauth/login", {"name": "sec"})
        assert err.value.reason == "unsupported"  # no browser for this grant
        write_rotated(id_token_file, bob)  # the host's single sign-on signed another user in
        wait_for_expiry(data_dir)
        assert whoami(shown, thread_id)["subject"] == "bob"
        seen, stats = fixture_get(url, "seen"), fixture_get(url, "stats")
        status = shown.request("mcpServerStatus/list", {"serverName": "sec"})["data"][0]
    assert seen["idpSubjects"] == ["alice", "bob"]
    assert (stats["idpExchanges"], stats["jwtBearerRequests"], stats["registrations"]) == (2, 2, 0)
    assert status["authStatus"] == "oAuth"
    kept = (data_dir / "credentials.json").read_text()
    assert alice not in kept and bob not in kept and not [jag for jag in seen["idJags"] if jag in kept]
    assert shown.leaked([alice, bob, *seen["idJags"], APP_SECRET]) == []


def test_an_idp_that_refuses_is_reauthentication_and_the_refused_token_is_not_sent_again(
    shown: Shown, tmp_path: Path
) -> None:
    id_token_file = tmp_path / "id_token"
    forged = id_token("not-the-idp-key-000000000000000000", "desktop", "mallory")
    write_rotated(id_token_file, forged)
    with oauth_fixture(*IDP) as url:
        shown.request("mcpServer/create", {"name": "sec", "config": enterprise(url, id_token_file)})
        refused = start_refused(shown)
        assert (refused.code, refused.reason, refused.data["step"]) == (-32016, "reauthenticationRequired", "idp")
        status = shown.request("mcpServerStatus/list", {"serverName": "sec"})["data"][0]
        assert status["runtimeStatus"] == "authenticationRequired"
        assert status["lastError"]["reason"] == "reauthenticationRequired"
        again = start_refused(shown)
        assert (again.reason, again.data["step"]) == ("reauthenticationRequired", "idp")
        assert fixture_get(url, "stats")["idpExchanges"] == 1  # the refused ID token was not sent again
        write_rotated(id_token_file, id_token(IDP_KEY, "desktop", "alice"))  # the user signed in again
        shown.request("mcpServer/start", {"name": "sec"})
        stats = fixture_get(url, "stats")
    assert (stats["idpExchanges"], stats["idpRefusals"], stats["jwtBearerRequests"]) == (2, 1, 1)
    id_token_file.unlink()
    assert shown.leaked([forged]) == []


def test_a_refusal_mid_session_shows_on_every_row_and_the_next_id_token_recovers_without_a_login(
    shown: Shown, data_dir: Path, tmp_path: Path
) -> None:
    id_token_file = tmp_path / "id_token"
    write_rotated(id_token_file, id_token(IDP_KEY, "desktop", "alice"))
    with oauth_fixture(*IDP, "--token-ttl", "2") as url:
        thread_id = started_thread(shown, enterprise(url, id_token_file))
        assert whoami(shown, thread_id)["subject"] == "alice"
        write_rotated(id_token_file, id_token(IDP_KEY, "desktop", "alice", ttl=-60))  # the sign-in lapsed
        wait_for_expiry(data_dir)
        with pytest.raises(DaemonError) as err:
            whoami(shown, thread_id)
        assert (err.value.reason, err.value.data["step"]) == ("reauthenticationRequired", "idp")
        management = shown.request("mcpServerStatus/list")["data"][0]  # told at once, though it sent nothing
        assert (management["runtimeStatus"], management["lastError"]["reason"]) == (
            "authenticationRequired", "reauthenticationRequired")
        thread_row = shown.request("mcpServerStatus/list", {"threadId": thread_id})["data"][0]
        assert thread_row["runtimeStatus"] != "connected"
        exchanges = fixture_get(url, "stats")["idpExchanges"]
        with pytest.raises(DaemonError) as err:
            whoami(shown, thread_id)  # tried again on demand, but the refused ID token is not sent again
        assert (err.value.reason, err.value.data["step"]) == ("reauthenticationRequired", "idp")
        assert fixture_get(url, "stats")["idpExchanges"] == exchanges
        thread_row = shown.request("mcpServerStatus/list", {"threadId": thread_id})["data"][0]
        assert (thread_row["runtimeStatus"], thread_row["lastError"]["reason"]) == (
            "authenticationRequired", "reauthenticationRequired")
        write_rotated(id_token_file, id_token(IDP_KEY, "desktop", "bob"))  # the host's SSO signed the user in
        assert whoami(shown, thread_id)["subject"] == "bob"  # the thread reconnects on demand
        shown.request("mcpServer/start", {"name": "sec"})  # and the host starts the management connection
        row = shown.request("mcpServerStatus/list", {"serverName": "sec"})["data"][0]
        assert row["runtimeStatus"] == "connected"


def test_an_idp_on_another_origin_needs_consent_before_the_id_token_goes_there(
    shown: Shown, tmp_path: Path
) -> None:
    id_token_file = tmp_path / "id_token"
    write_rotated(id_token_file, id_token(IDP_KEY, "desktop", "alice"))
    with oauth_fixture(*IDP) as url:
        elsewhere = fixture_origin(url).replace("127.0.0.1", "localhost")  # the same listener, another origin
        config = enterprise(url, id_token_file)
        config["oauth"]["idp"]["tokenEndpoint"] = f"{elsewhere}/idp/token"
        shown.request("mcpServer/create", {"name": "sec", "config": config})
        refused = start_refused(shown)
        assert (refused.code, refused.reason, refused.data["origin"]) == (-32012, "originNotAllowed", elsewhere)
        assert fixture_get(url, "stats")["idpExchanges"] == 0
        config["oauth"]["allowedOrigins"] = [elsewhere]
        shown.request("mcpServer/update", {"name": "sec", "config": config})
        shown.request("mcpServer/start", {"name": "sec"})
        assert fixture_get(url, "stats")["idpExchanges"] == 1


def workload(url: str, assertion_file: Path, **changes: Any) -> dict[str, Any]:
    oauth = {"grant": "jwtBearer", "clientId": "ci-runner", "expectedIssuer": fixture_origin(url),
             "assertionFile": str(assertion_file)}
    return {"type": "http", "url": url, "oauth": {**oauth, **changes}}


@pytest.fixture
def platform_key(tmp_path: Path) -> tuple[str, Path]:
    private, public = pem_pair("ES256")
    public_file = tmp_path / "platform.pub.pem"
    public_file.write_text(public)
    return private, public_file


@pytest.mark.parametrize("dpop", [False, True])
def test_a_workload_jwt_is_the_grant_and_a_rotated_file_is_read_for_the_next_token(
    shown: Shown, data_dir: Path, tmp_path: Path, platform_key: tuple[str, Path], dpop: bool
) -> None:
    private, public_file = platform_key
    assertion_file = tmp_path / "token"
    extra = ("--dpop",) if dpop else ()
    with oauth_fixture("--workload-key", str(public_file), "--token-ttl", "2", *extra) as url:
        first, second = (workload_jwt(private, fixture_origin(url), name) for name in ("build-1", "build-2"))
        write_rotated(assertion_file, first)
        thread_id = started_thread(shown, workload(url, assertion_file))
        assert whoami(shown, thread_id) == {"clientId": "ci-runner", "subject": "build-1", "scopes": ["mcp"]}
        write_rotated(assertion_file, second)  # the platform rotated the projected token
        wait_for_expiry(data_dir)
        assert whoami(shown, thread_id)["subject"] == "build-2"
        stats, seen = fixture_get(url, "stats"), fixture_get(url, "seen")
    # No registration, no client authentication (the fixture refuses any), no other grant.
    assert (stats["registrations"], stats["clientCredentialsTokens"], stats["jwtBearerRefusals"]) == (0, 0, 0)
    if dpop:  # the first token was Bearer until the resource asked; every later one is bound
        assert stats["jwtBearerRequests"] == 3 and stats["dpopTokens"] == 2 and stats["invalidProofs"] == 0
        entries = json.loads((data_dir / "credentials.json").read_text())["entries"]
        assert [entry["tokenType"] for entry in entries.values()] == ["DPoP"]
    else:
        assert stats["jwtBearerRequests"] == 2
    assert shown.leaked([first, second, *seen["proofs"]]) == []


def test_a_refused_workload_jwt_is_not_sent_again_until_the_file_changes(
    shown: Shown, tmp_path: Path, platform_key: tuple[str, Path]
) -> None:
    private, public_file = platform_key
    assertion_file = tmp_path / "token"
    with oauth_fixture("--workload-key", str(public_file)) as url:
        wrong_audience = workload_jwt(private, "https://another-issuer.example", "build-1")
        write_rotated(assertion_file, wrong_audience)
        shown.request("mcpServer/create", {"name": "sec", "config": workload(url, assertion_file)})
        for _ in range(2):
            refused = start_refused(shown)
            assert (refused.code, refused.reason, refused.data["step"]) == (-32016, "oauthFailed", "token")
            assert "oauth.assertionFile" in refused.message
        stats = fixture_get(url, "stats")
        assert (stats["jwtBearerRequests"], stats["jwtBearerRefusals"]) == (1, 1)  # no retry, no other grant
        assert stats["registrations"] == stats["clientCredentialsTokens"] == 0
        write_rotated(assertion_file, workload_jwt(private, fixture_origin(url), "build-1"))
        shown.request("mcpServer/start", {"name": "sec"})
        assert fixture_get(url, "stats")["jwtBearerRequests"] == 2
    assert shown.leaked([wrong_audience]) == []


def test_a_workload_credential_that_is_not_there_is_typed(shown: Shown, tmp_path: Path) -> None:
    with oauth_fixture() as url:
        missing = workload(url, tmp_path / "absent")
        shown.request("mcpServer/create", {"name": "sec", "config": missing})
        refused = start_refused(shown)
        assert (refused.reason, refused.data["step"]) == ("oauthFailed", "assertion")
        unset = workload(url, tmp_path / "absent", assertionEnvVar="UNSET_WORKLOAD_JWT")
        del unset["oauth"]["assertionFile"]
        shown.request("mcpServer/create", {"name": "env", "config": unset})
        with pytest.raises(DaemonError) as err:
            shown.request("mcpServer/start", {"name": "env"})
        assert (err.value.reason, err.value.data["variable"]) == ("missingEnvVar", "UNSET_WORKLOAD_JWT")
        assert fixture_get(url, "stats")["jwtBearerRequests"] == 0
