"""OAuth secrets in the OS keychain (SPEC §14) through the real daemon, a real Secret Service and the strict OAuth
fixture: a ``private_key_jwt`` machine client whose key is given as a value (accepted with the keychain, kept
there), its tokens kept there too (``credentials.json`` names them only), and both gone when the server is deleted;
an enterprise client's two secrets (``oauth.clientSecret``, ``oauth.idp.clientSecret``) given as values likewise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scripts.smoke.fixtures.launch import oauth_fixture
from testing.daemon_client import DaemonError, running_daemon
from testing.oauth import TIMEOUT, fixture_origin, id_token, pem_pair, tool_call, write_rotated
from testing.secret_service import SecretServiceSession

pytestmark = pytest.mark.daemon


def test_a_private_key_given_as_a_value_and_the_tokens_live_in_the_keychain(
    keychain: SecretServiceSession, data_dir: Path, tmp_path: Path
) -> None:
    private, public = pem_pair("ES256")
    public_file = tmp_path / "bot.pub.pem"
    public_file.write_text(public)
    body = private.splitlines()[1]
    with (
        oauth_fixture("--machine-key-client", f"bot:{public_file}") as url,
        running_daemon(data_dir, env=keychain.env(), args=("--secret-store", "keychain")) as d,
    ):
        d.initialize()
        issuer = url.rsplit("/", 1)[0] + "/"
        oauth: dict[str, Any] = {"grant": "clientCredentials", "clientId": "bot", "privateKey": private,
                                 "signingAlgorithm": "ES256", "expectedIssuer": issuer, "scopes": ["mcp"]}
        created = d.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": url, "oauth": oauth}})
        assert created["server"]["config"]["oauth"]["privateKey"] == "***"
        d.request("mcpServer/start", {"name": "sec"}, timeout=TIMEOUT)
        thread_id = d.request("thread/start", {"servers": ["sec"]})["thread"]["id"]
        who = d.request("mcpServer/tool/call", tool_call(thread_id, "whoami"), timeout=TIMEOUT)
        assert who["structuredContent"]["clientId"] == "bot"
        status = next(s for s in d.request("mcpServerStatus/list")["data"] if s["name"] == "sec")
        assert (status["runtimeStatus"], status["authStatus"]) == ("connected", "oAuth")

        [(_, kept_key)] = keychain.items("mcp-app-server: sec oauth.privateKey")
        assert kept_key == private
        [(_, kept_login)] = keychain.items(f"mcp-app-server: sec oauth {url}")
        tokens = json.loads(kept_login)["tokens"]
        entry = next(iter(json.loads((data_dir / "credentials.json").read_text())["entries"].values()))
        assert entry["holds"] == ["tokens"] and entry["secrets"].startswith("keychain:") and "tokens" not in entry
        for path in data_dir.rglob("*"):
            if path.is_file():
                text = path.read_text(errors="replace")
                assert body not in text and tokens["access_token"] not in text, path
        assert body not in d.stderr() and tokens["access_token"] not in d.stderr()

        with pytest.raises(DaemonError) as err:  # "***" where nothing is kept is still refused
            d.request("mcpServer/create", {"name": "other", "config": {"type": "http", "url": url,
                                                                        "oauth": {**oauth, "privateKey": "***"}}})
        assert err.value.reason == "redactedValue"

        d.request("mcpServer/delete", {"name": "sec"})
        assert keychain.items("mcp-app-server: sec ") == []  # the key and the login alike


def test_with_the_file_store_a_literal_key_is_still_refused(data_dir: Path) -> None:
    with running_daemon(data_dir, args=("--secret-store", "file")) as d:
        d.initialize()
        oauth = {"grant": "clientCredentials", "clientId": "bot", "privateKey": "-----BEGIN PRIVATE KEY-----",
                 "expectedIssuer": "https://as.example.com/"}
        with pytest.raises(DaemonError) as err:
            d.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": "https://mcp.example.com/mcp",
                                                                      "oauth": oauth}})
        assert (err.value.code, err.value.reason) == (-32012, "inlineSecret")


IDP_KEY = "idp-signing-key-of-the-fixture-0123456789"
APP_SECRET = "app-client-secret-in-the-keychain-5678"
IDP_SECRET = "idp-client-secret-in-the-keychain-4321"


def test_an_enterprise_clients_secrets_given_as_values_are_kept_in_the_keychain_and_reach_their_servers(
    keychain: SecretServiceSession, data_dir: Path, tmp_path: Path
) -> None:
    """Both secrets of ``grant: identityAssertion`` as literals: accepted with the keychain, read back ``"***"``,
    kept as items named for a person, and used: the IdP refuses an exchange without its secret, the authorization
    server a jwt-bearer request without the app's."""
    id_token_file = tmp_path / "sso" / "id_token"
    id_token_file.parent.mkdir()
    write_rotated(id_token_file, id_token(IDP_KEY, "desktop", "alice"))
    trace = tmp_path / "trace.jsonl"
    fixture = ("--idp", f"desktop:{IDP_KEY}", "--idp-client-secret", IDP_SECRET, "--jag-client", f"app:{APP_SECRET}")
    args = ("--secret-store", "keychain", "--credential-dir", str(tmp_path), "--trace", str(trace))
    with oauth_fixture(*fixture) as url, running_daemon(data_dir, env=keychain.env(), args=args) as d:
        d.initialize()
        origin = fixture_origin(url)
        oauth: dict[str, Any] = {
            "grant": "identityAssertion", "clientId": "app", "clientSecret": APP_SECRET, "expectedIssuer": origin,
            "scopes": ["mcp"], "idp": {"tokenEndpoint": f"{origin}/idp/token", "clientId": "desktop",
                                       "clientSecret": IDP_SECRET, "idTokenFile": str(id_token_file)},
        }  # fmt: skip
        created = d.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": url, "oauth": oauth}})
        shown = created["server"]["config"]["oauth"]
        assert (shown["clientSecret"], shown["idp"]["clientSecret"]) == ("***", "***")
        d.request("mcpServer/start", {"name": "sec"}, timeout=TIMEOUT)
        thread_id = d.request("thread/start", {"servers": ["sec"]})["thread"]["id"]
        who = d.request("mcpServer/tool/call", tool_call(thread_id, "whoami"), timeout=TIMEOUT)
        assert who["structuredContent"]["subject"] == "alice"

        assert [v for _, v in keychain.items("mcp-app-server: sec oauth.idp.clientSecret")] == [IDP_SECRET]
        assert [v for _, v in keychain.items("mcp-app-server: sec oauth.clientSecret")] == [APP_SECRET]
        stored = json.loads((data_dir / "mcps.json").read_text())["mcpServers"]["sec"]["oauth"]
        assert stored["clientSecret"].startswith("keychain:") and stored["idp"]["clientSecret"].startswith("keychain:")

        listed = d.request("mcpServer/list", {"names": ["sec"]})["data"][0]["config"]
        d.request("mcpServer/update", {"name": "sec", "config": {**listed, "description": "kept"}})  # "***" keeps
        d.request("mcpServer/stop", {"name": "sec"}, timeout=TIMEOUT)
        d.request("mcpServer/start", {"name": "sec"}, timeout=TIMEOUT)
        assert [v for _, v in keychain.items("mcp-app-server: sec oauth.idp.clientSecret")] == [IDP_SECRET]

        with pytest.raises(DaemonError) as twice:  # one place for the IdP's secret
            both = {**oauth, "idp": {**oauth["idp"], "clientSecretEnvVar": "IDP_SECRET"}}
            d.request("mcpServer/create", {"name": "two", "config": {"type": "http", "url": url, "oauth": both}})
        assert twice.value.reason == "invalidParams"
        log = d.stderr()
        d.request("mcpServer/delete", {"name": "sec"})
        assert keychain.items("mcp-app-server: sec ") == []
    for secret in (APP_SECRET, IDP_SECRET):
        assert secret not in log and secret not in trace.read_text()
        for path in data_dir.rglob("*"):
            assert not path.is_file() or secret.encode() not in path.read_bytes(), path


def test_with_the_file_store_an_idp_secret_given_as_a_value_is_refused(data_dir: Path, tmp_path: Path) -> None:
    with running_daemon(data_dir, args=("--secret-store", "file")) as d:
        d.initialize()
        oauth = {"grant": "identityAssertion", "clientId": "app", "clientSecretEnvVar": "APP_SECRET",
                 "expectedIssuer": "https://as.example.com/", "idp": {"tokenEndpoint": "https://idp.example.com/token",
                 "clientId": "desktop", "clientSecret": IDP_SECRET, "idTokenFile": str(tmp_path / "id")}}  # fmt: skip
        config = {"type": "http", "url": "https://mcp.example.com/mcp", "oauth": oauth}
        with pytest.raises(DaemonError) as err:
            d.request("mcpServer/create", {"name": "sec", "config": config})
        assert (err.value.code, err.value.reason) == (-32012, "inlineSecret")
        assert IDP_SECRET not in json.dumps(err.value.data) and IDP_SECRET not in d.stderr()
