"""OAuth secrets in the OS keychain (SPEC §14) through the real daemon, a real Secret Service and the strict OAuth
fixture: a ``private_key_jwt`` machine client whose key is given as a value (accepted with the keychain, kept
there), its tokens kept there too (``credentials.json`` names them only), and both gone when the server is deleted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scripts.smoke.fixtures.launch import oauth_fixture
from testing.daemon_client import DaemonError, running_daemon
from testing.oauth import TIMEOUT, pem_pair, tool_call
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
