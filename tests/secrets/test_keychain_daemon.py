"""Secrets in the OS keychain (SPEC §14), driven through the real daemon against a real Secret Service (GNOME
Keyring on a private session bus): a key set by ``mcpServer/update`` reaches the server at its next start, no file
of the data dir, the trace or the logs holds it, and the locked and missing cases answer typed."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import Daemon, DaemonError, running_daemon
from testing.fixtures import fixture_config
from testing.secret_service import SecretServiceSession

pytestmark = pytest.mark.daemon

START_TIMEOUT = 40.0
FIRST_KEY = "sk-first-key-0123456789"
SECOND_KEY = "sk-second-key-9876543210"
KEYCHAIN = ("--secret-store", "keychain")


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def env_digest(daemon: Daemon, server: str, variable: str = "API_KEY") -> str:
    """What a fresh thread's server process got in ``variable`` (its SHA-256): the server's next start."""
    thread_id = daemon.request("thread/start", {"servers": [server]})["thread"]["id"]
    result = daemon.request(
        "mcpServer/tool/call",
        {"threadId": thread_id, "server": server, "tool": "env_digest", "arguments": {"name": variable}},
        timeout=START_TIMEOUT,
    )
    text: str = result["content"][0]["text"]
    return text


def start_error(daemon: Daemon, server: str) -> DaemonError:
    with pytest.raises(DaemonError) as err:
        daemon.request("mcpServer/start", {"name": server}, timeout=START_TIMEOUT)
    return err.value


def files_holding(root: Path, secrets: tuple[str, ...]) -> list[str]:
    """Every file under ``root`` whose bytes contain one of ``secrets``."""
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if any(secret.encode() in data for secret in secrets):
                found.append(str(path))
    return found


def wait_for_log(daemon: Daemon, event: str, timeout: float = START_TIMEOUT) -> None:
    """Until the daemon's log has a line for ``event`` (the log file is read again until the deadline)."""
    deadline = time.monotonic() + timeout
    while f'"event": "{event}"' not in daemon.stderr() and f'"event":"{event}"' not in daemon.stderr():
        assert time.monotonic() < deadline, f"no {event} in the daemon's log within {timeout}s"
        time.sleep(0.05)


def create_fixture(daemon: Daemon, name: str, key: str) -> dict[str, Any]:
    config = fixture_config("--env-digest-tool", env={"API_KEY": key})
    server: dict[str, Any] = daemon.request("mcpServer/create", {"name": name, "config": config})["server"]
    return server


def test_a_key_changed_by_update_reaches_the_server_at_its_next_start_and_no_file_holds_it(
    keychain: SecretServiceSession, data_dir: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    with running_daemon(data_dir, env=keychain.env(), args=(*KEYCHAIN, "--trace", str(trace))) as daemon:
        result = daemon.initialize()
        assert result["secretStore"] == {"kind": "keychain", "backend": "Secret Service"}
        create_fixture(daemon, "fx", FIRST_KEY)
        assert env_digest(daemon, "fx") == digest(FIRST_KEY)

        listed = daemon.request("mcpServer/list", {"names": ["fx"]})["data"][0]["config"]
        assert listed["env"] == {"API_KEY": "***"}
        daemon.request("mcpServer/update", {"name": "fx", "patch": {"env": {"API_KEY": SECOND_KEY}}})
        assert env_digest(daemon, "fx") == digest(SECOND_KEY)  # the same daemon: no restart

        # "***" keeps the kept key; the item is the keychain's, named for a person
        daemon.request("mcpServer/update", {"name": "fx", "config": {**listed, "description": "kept"}})
        assert env_digest(daemon, "fx") == digest(SECOND_KEY)
        items = keychain.items("mcp-app-server: fx env.API_KEY")
        assert [secret for _, secret in items] == [SECOND_KEY]  # the replaced key's item is gone

    stored = json.loads((data_dir / "mcps.json").read_text())
    assert stored["mcpServers"]["fx"]["env"]["API_KEY"].startswith("keychain:")
    secrets = (FIRST_KEY, SECOND_KEY)
    assert files_holding(data_dir, secrets) == []
    assert files_holding(tmp_path, secrets) == []  # the trace and the daemon's log (stderr) too
    assert trace.stat().st_size > 0 and daemon.stderr_path.stat().st_size > 0


def test_a_literal_secret_header_is_accepted_with_the_keychain_and_kept_there(
    keychain: SecretServiceSession, data_dir: Path
) -> None:
    config = {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": f"Bearer {FIRST_KEY}"}}
    with running_daemon(data_dir, env=keychain.env(), args=KEYCHAIN) as daemon:
        daemon.initialize()
        created = daemon.request("mcpServer/create", {"name": "web", "config": {**config, "enabled": False}})
        assert created["server"]["config"]["headers"] == {"Authorization": "***"}
    assert [secret for _, secret in keychain.items("mcp-app-server: web headers.Authorization")] == [
        f"Bearer {FIRST_KEY}"
    ]
    assert files_holding(data_dir, (FIRST_KEY,)) == []


def test_a_locked_keychain_fails_the_start_and_the_update_typed_changes_nothing_and_a_later_start_retries(
    keychain: SecretServiceSession, data_dir: Path
) -> None:
    with running_daemon(data_dir, env=keychain.env(), args=KEYCHAIN) as daemon:
        daemon.initialize()
        create_fixture(daemon, "fx", FIRST_KEY)
        before = (data_dir / "mcps.json").read_bytes()
        keychain.lock()

        err = start_error(daemon, "fx")
        assert (err.code, err.reason, err.data["backend"]) == (-32012, "secretStoreLocked", "Secret Service")
        with pytest.raises(DaemonError) as update:
            daemon.request("mcpServer/update", {"name": "fx", "patch": {"env": {"API_KEY": SECOND_KEY}}})
        assert update.value.reason == "secretStoreLocked"
        assert (data_dir / "mcps.json").read_bytes() == before  # a failed write leaves the config as it was
        assert daemon.request("mcpServer/list", {})["data"][0]["revision"] == 1  # and the daemon keeps serving
        assert FIRST_KEY not in json.dumps(err.data) and SECOND_KEY not in json.dumps(update.value.data)

        keychain.unlock()  # the person unlocks it: the next start retries and finds the key, with no restart
        assert env_digest(daemon, "fx") == digest(FIRST_KEY)
        daemon.request("mcpServer/update", {"name": "fx", "patch": {"env": {"API_KEY": SECOND_KEY}}})
        assert env_digest(daemon, "fx") == digest(SECOND_KEY)
    assert [secret for _, secret in keychain.items("mcp-app-server: fx env.API_KEY")] == [SECOND_KEY]


def test_an_item_removed_behind_the_daemon_is_missing_secret_naming_the_field(
    keychain: SecretServiceSession, data_dir: Path
) -> None:
    with running_daemon(data_dir, env=keychain.env(), args=KEYCHAIN) as daemon:
        daemon.initialize()
        create_fixture(daemon, "fx", FIRST_KEY)
        assert keychain.delete_items("mcp-app-server: fx env.API_KEY") == 1
        err = start_error(daemon, "fx")
        assert (err.code, err.reason, err.data["field"]) == (-32012, "missingSecret", "env.API_KEY")
        daemon.request("mcpServer/update", {"name": "fx", "patch": {"env": {"API_KEY": SECOND_KEY}}})
        assert env_digest(daemon, "fx") == digest(SECOND_KEY)  # sent again: used at the next start


def test_delete_removes_the_servers_items(keychain: SecretServiceSession, data_dir: Path) -> None:
    with running_daemon(data_dir, env=keychain.env(), args=KEYCHAIN) as daemon:
        daemon.initialize()
        create_fixture(daemon, "fx", FIRST_KEY)
        create_fixture(daemon, "other", SECOND_KEY)
        daemon.request("mcpServer/delete", {"name": "fx"})
    assert keychain.items("mcp-app-server: fx ") == []
    assert [secret for _, secret in keychain.items("mcp-app-server: other ")] == [SECOND_KEY]


def test_secrets_kept_in_files_move_into_the_keychain_at_its_first_start(
    keychain: SecretServiceSession, data_dir: Path
) -> None:
    with running_daemon(data_dir, args=("--secret-store", "file")) as daemon:
        assert daemon.initialize()["secretStore"] == {"kind": "file", "backend": "files in the data dir"}
        create_fixture(daemon, "fx", FIRST_KEY)
    assert files_holding(data_dir, (FIRST_KEY,)) == [str(data_dir / "mcps.json")]

    with running_daemon(data_dir, env=keychain.env()) as daemon:  # auto: the keychain answers
        assert daemon.initialize()["secretStore"]["kind"] == "keychain"
        daemon.request("mcpServer/list", {})  # the host's first answer: the move begins after it
        wait_for_log(daemon, "secrets_moved_in")
        assert env_digest(daemon, "fx") == digest(FIRST_KEY)
    assert files_holding(data_dir, (FIRST_KEY,)) == []
    assert [secret for _, secret in keychain.items("mcp-app-server: fx env.API_KEY")] == [FIRST_KEY]


def test_the_store_refuses_to_start_where_it_cannot_keep_its_word(data_dir: Path, tmp_path: Path) -> None:
    """``keychain`` with none answering, and ``file`` on a data dir whose secrets are in the keychain: exit 2."""
    with running_daemon(data_dir, env={"DBUS_SESSION_BUS_ADDRESS": ""}, args=KEYCHAIN) as daemon:
        assert daemon.process.wait(30) == 2
    assert "no OS keychain answers (tried Secret Service: no session bus" in daemon.stderr()

    marker = {"version": 1, "kind": "keychain", "backend": "Secret Service", "id": "0123456789abcdef"}
    (data_dir / "secret-store.json").write_text(json.dumps(marker))
    with running_daemon(data_dir, args=("--secret-store", "file")) as daemon:
        assert daemon.process.wait(30) == 2
    assert "kept in the OS keychain (Secret Service)" in daemon.stderr()


def test_a_move_in_interrupted_after_the_keychain_write_is_done_again_and_loses_nothing(
    keychain: SecretServiceSession, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The crash between the keychain write and the file's rewrite: the item is written (by the daemon's own store,
    here in the test's process) and the daemon killed before ``mcps.json`` names it. The value is then in both
    places; the next start moves it again, and the server gets it."""
    with running_daemon(data_dir, args=("--secret-store", "file")) as daemon:
        daemon.initialize()
        create_fixture(daemon, "fx", FIRST_KEY)
    before = (data_dir / "mcps.json").read_bytes()
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", keychain.address)
    from mcp_runtime.secrets.keychain import KeychainSecretStore

    KeychainSecretStore("Secret Service", data_dir).keep("fx", "env.API_KEY", FIRST_KEY)  # ... and the crash
    assert (data_dir / "mcps.json").read_bytes() == before  # in both places now
    assert [secret for _, secret in keychain.items("mcp-app-server: fx env.API_KEY")] == [FIRST_KEY]

    with running_daemon(data_dir, env=keychain.env()) as daemon:
        assert daemon.initialize()["secretStore"]["kind"] == "keychain"  # the marker the first write left
        daemon.request("mcpServer/list", {})
        wait_for_log(daemon, "secrets_moved_in")
        assert env_digest(daemon, "fx") == digest(FIRST_KEY)
    assert files_holding(data_dir, (FIRST_KEY,)) == []
    kept = [secret for _, secret in keychain.items("mcp-app-server: fx env.API_KEY")]
    assert kept and set(kept) == {FIRST_KEY}  # the interrupted write's item is an extra copy, never a loss


def test_a_locked_keychain_moves_nothing_in_and_the_next_start_does(
    keychain: SecretServiceSession, data_dir: Path
) -> None:
    with running_daemon(data_dir, args=("--secret-store", "file")) as daemon:
        daemon.initialize()
        create_fixture(daemon, "fx", FIRST_KEY)
    before = (data_dir / "mcps.json").read_bytes()
    keychain.lock()
    with running_daemon(data_dir, env=keychain.env()) as daemon:
        assert daemon.initialize()["secretStore"]["kind"] == "keychain"
        daemon.request("mcpServer/list", {})
        wait_for_log(daemon, "secrets_not_moved_in")
        assert env_digest(daemon, "fx") == digest(FIRST_KEY)  # still read from the file it is in
    assert (data_dir / "mcps.json").read_bytes() == before  # nothing rewritten, nothing lost
    keychain.unlock()
    with running_daemon(data_dir, env=keychain.env()) as daemon:
        daemon.initialize()
        daemon.request("mcpServer/list", {})
        wait_for_log(daemon, "secrets_moved_in")
    assert files_holding(data_dir, (FIRST_KEY,)) == []
    assert [secret for _, secret in keychain.items("mcp-app-server: fx env.API_KEY")] == [FIRST_KEY]
