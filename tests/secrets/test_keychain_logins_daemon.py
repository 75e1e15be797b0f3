"""A server's logins and items over its life (SPEC §14: "`mcpServer/delete` removes the server's items; a logout
removes its tokens"), through the real daemon, a real Secret Service and the OAuth fixture. SPEC's catalog has no
logout method: the ways a server's tokens go are a login that replaces them, a URL change (the old URL's tokens are
never used again) and delete; each leaves no item behind, and a locked keychain refuses a delete before anything
changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.smoke.fixtures.launch import oauth_fixture
from testing.daemon_client import DaemonError, running_daemon
from testing.fixtures import fixture_config
from testing.oauth import TIMEOUT, login, tool_call
from testing.secret_service import SecretServiceSession

pytestmark = pytest.mark.daemon

KEYCHAIN = ("--secret-store", "keychain")


def credential_entries(data_dir: Path) -> dict[str, dict[str, object]]:
    path = data_dir / "credentials.json"
    return json.loads(path.read_text())["entries"] if path.exists() else {}  # type: ignore[no-any-return]


def test_a_new_login_replaces_the_item_a_url_change_and_delete_remove_it(
    keychain: SecretServiceSession, data_dir: Path
) -> None:
    with oauth_fixture() as url, running_daemon(data_dir, env=keychain.env(), args=KEYCHAIN) as d:
        d.initialize()
        d.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": url, "oauth": {}}})
        assert login(d, "sec")["success"]
        [(_, first)] = keychain.items(f"mcp-app-server: sec oauth {url}")
        assert login(d, "sec")["success"]  # the user logs in again: new tokens, one item
        [(_, second)] = keychain.items(f"mcp-app-server: sec oauth {url}")
        first_token = json.loads(first)["tokens"]["access_token"]
        assert json.loads(second)["tokens"]["access_token"] != first_token
        thread_id = d.request("thread/start", {"servers": ["sec"]})["thread"]["id"]
        assert d.request("mcpServer/tool/call", tool_call(thread_id, "whoami"), timeout=TIMEOUT)["structuredContent"]

        other = url.replace("/mcp", "/mcp/")
        d.request("mcpServer/update", {"name": "sec", "config": {"type": "http", "url": other, "oauth": {}}})
        assert keychain.items("mcp-app-server: sec ") == []  # the old URL's tokens went with it
        assert credential_entries(data_dir) == {}
        with pytest.raises(DaemonError) as err:
            d.request("mcpServer/start", {"name": "sec"}, timeout=TIMEOUT)
        assert err.value.reason == "authRequired"

        d.request("mcpServer/update", {"name": "sec", "config": {"type": "http", "url": url, "oauth": {}}})
        assert login(d, "sec")["success"]
        assert len(keychain.items("mcp-app-server: sec ")) == 1
        d.request("mcpServer/delete", {"name": "sec"})
        assert keychain.items("mcp-app-server: sec ") == [] and credential_entries(data_dir) == {}
        assert first_token not in d.stderr()


def test_a_locked_keychain_refuses_the_delete_of_a_server_with_items_and_changes_nothing(
    keychain: SecretServiceSession, data_dir: Path
) -> None:
    with running_daemon(data_dir, env=keychain.env(), args=KEYCHAIN) as d:
        d.initialize()
        keyed = fixture_config("--env-digest-tool", env={"API_KEY": "sk-locked-delete-1234"})
        d.request("mcpServer/create", {"name": "keyed", "config": {**keyed, "enabled": False}})
        d.request("mcpServer/create", {"name": "plain", "config": {**fixture_config(), "enabled": False}})
        before = (data_dir / "mcps.json").read_bytes()
        keychain.lock()
        with pytest.raises(DaemonError) as refused:
            d.request("mcpServer/delete", {"name": "keyed"})
        assert (refused.value.code, refused.value.reason) == (-32012, "secretStoreLocked")
        assert (data_dir / "mcps.json").read_bytes() == before
        assert [s["name"] for s in d.request("mcpServer/list", {})["data"]] == ["keyed", "plain"]
        d.request("mcpServer/delete", {"name": "plain"})  # nothing of it is in the keychain: deleted
        assert [s["name"] for s in d.request("mcpServer/list", {})["data"]] == ["keyed"]
    assert len(keychain.labels("mcp-app-server: keyed env.API_KEY")) == 1  # still there, still named


def test_a_url_change_with_a_locked_keychain_stands_and_keeps_the_old_login_named(
    keychain: SecretServiceSession, data_dir: Path
) -> None:
    """The old URL's item cannot be removed while the keychain is locked: the update still stands, and the file
    still names the item (an unused login, never a value nothing names)."""
    with oauth_fixture() as url, running_daemon(data_dir, env=keychain.env(), args=KEYCHAIN) as d:
        d.initialize()
        d.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": url, "oauth": {}}})
        assert login(d, "sec")["success"]
        keychain.lock()
        other = url.replace("/mcp", "/mcp/")
        updated = d.request("mcpServer/update", {"name": "sec", "config": {"type": "http", "url": other, "oauth": {}}})
        assert updated["server"]["config"]["url"] == other
        assert list(credential_entries(data_dir)) == [f"sec {url}"]
        assert len(keychain.labels(f"mcp-app-server: sec oauth {url}")) == 1
