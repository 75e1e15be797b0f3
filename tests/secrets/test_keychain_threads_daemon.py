"""Threads and the keychain (SPEC §14): a thread keeps its servers' configs in its record (``threads/<id>.json``),
so what it records of a secret is a reference, never the value; a key changed by ``mcpServer/update`` is what a
running thread's server gets at its next start, too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import Daemon, running_daemon
from testing.fixtures import fixture_config
from testing.secret_service import SecretServiceSession

pytestmark = pytest.mark.daemon

TIMEOUT = 40.0
FIRST_KEY = "sk-thread-first-0123456789"
SECOND_KEY = "sk-thread-second-9876543210"
INLINE_KEY = "sk-thread-inline-5555555555"
KEYCHAIN = ("--secret-store", "keychain")


def digest_in(daemon: Daemon, thread_id: str, server: str) -> str:
    import hashlib

    params: dict[str, Any] = {"threadId": thread_id, "server": server, "tool": "env_digest",
                              "arguments": {"name": "API_KEY"}}  # fmt: skip
    text: str = daemon.request("mcpServer/tool/call", params, timeout=TIMEOUT)["content"][0]["text"]
    return {hashlib.sha256(k.encode()).hexdigest(): k for k in (FIRST_KEY, SECOND_KEY, INLINE_KEY)}.get(text, text)


def files_holding(root: Path, secrets: tuple[str, ...]) -> list[str]:
    return [
        str(path)
        for path in root.rglob("*")
        if path.is_file() and any(secret.encode() in path.read_bytes() for secret in secrets)
    ]


def test_a_running_thread_gets_the_changed_key_at_its_servers_next_start(
    keychain: SecretServiceSession, data_dir: Path
) -> None:
    with running_daemon(data_dir, env=keychain.env(), args=KEYCHAIN) as d:
        d.initialize()
        config = fixture_config("--env-digest-tool", env={"API_KEY": FIRST_KEY})
        d.request("mcpServer/create", {"name": "fx", "config": {**config, "enabled": True}})
        thread_id = d.request("thread/start", {"servers": ["fx"]})["thread"]["id"]
        assert digest_in(d, thread_id, "fx") == FIRST_KEY
        d.request("mcpServer/update", {"name": "fx", "patch": {"env": {"API_KEY": SECOND_KEY}}})
    with running_daemon(data_dir, env=keychain.env(), args=KEYCHAIN) as d:  # the thread's server starts again
        d.initialize()
        assert digest_in(d, thread_id, "fx") == SECOND_KEY
    assert files_holding(data_dir, (FIRST_KEY, SECOND_KEY)) == []


def test_an_inline_servers_secret_is_kept_in_the_keychain_not_in_the_thread_record(
    keychain: SecretServiceSession, data_dir: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    with running_daemon(data_dir, env=keychain.env(), args=(*KEYCHAIN, "--trace", str(trace))) as d:
        d.initialize()
        inline = fixture_config("--env-digest-tool", env={"API_KEY": INLINE_KEY})
        thread_id = d.request("thread/start", {"mcpServers": {"mine": inline}})["thread"]["id"]
        assert digest_in(d, thread_id, "mine") == INLINE_KEY
        assert files_holding(data_dir, (INLINE_KEY,)) == []
    with running_daemon(data_dir, env=keychain.env(), args=KEYCHAIN) as d:  # the thread outlives the daemon
        d.initialize()
        assert digest_in(d, thread_id, "mine") == INLINE_KEY
    record = json.loads(next((data_dir / "threads").glob("thr_*.json")).read_text())
    assert record["mcpServers"]["mine"]["env"]["API_KEY"].startswith("keychain:")
    assert trace.stat().st_size > 0 and files_holding(tmp_path, (INLINE_KEY,)) == []  # the trace, the logs too


def test_thread_records_written_with_the_file_store_move_into_the_keychain(
    keychain: SecretServiceSession, data_dir: Path
) -> None:
    """An inline server's key in a record written while the secrets lived in files, and an app server's key in a
    record as earlier versions wrote it: the first start with the keychain moves both, and both threads still work."""
    import time

    with running_daemon(data_dir, args=("--secret-store", "file")) as d:
        d.initialize()
        config = fixture_config("--env-digest-tool", env={"API_KEY": FIRST_KEY})
        d.request("mcpServer/create", {"name": "fx", "config": config})
        app_thread = d.request("thread/start", {"servers": ["fx"]})["thread"]["id"]
        inline = fixture_config("--env-digest-tool", env={"API_KEY": INLINE_KEY})
        inline_thread = d.request("thread/start", {"mcpServers": {"mine": inline}, "servers": []})["thread"]["id"]
    app_record = data_dir / "threads" / f"{app_thread}.json"
    document = json.loads(app_record.read_text())
    assert document["mcpServers"]["fx"]["env"] == {"API_KEY": "***"}
    document["mcpServers"]["fx"]["env"] = {"API_KEY": FIRST_KEY}  # what records held before they named it ***
    app_record.write_text(json.dumps(document))
    assert len(files_holding(data_dir / "threads", (FIRST_KEY, INLINE_KEY))) == 2

    with running_daemon(data_dir, env=keychain.env()) as d:
        assert d.initialize()["secretStore"]["kind"] == "keychain"
        d.request("mcpServer/list", {})
        deadline = time.monotonic() + TIMEOUT
        while '"secrets_moved_in"' not in d.stderr() and "secrets_moved_in" not in d.stderr():
            assert time.monotonic() < deadline, "no secrets_moved_in in the daemon's log"
            time.sleep(0.05)
        assert digest_in(d, inline_thread, "mine") == INLINE_KEY
        assert digest_in(d, app_thread, "fx") == FIRST_KEY
    assert files_holding(data_dir, (FIRST_KEY, INLINE_KEY)) == []
    assert json.loads(app_record.read_text())["mcpServers"]["fx"]["env"] == {"API_KEY": "***"}
