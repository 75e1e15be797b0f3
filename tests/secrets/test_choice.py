"""``--secret-store`` decided at start-up (SPEC §14): the keychain when one answers on the session bus, the files
otherwise, and the cases that must refuse to start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_runtime.secrets.choice import FILE_BACKEND, MARKER_FILE, decide_secret_store
from testing.secret_service import SecretServiceSession


def mark(data_dir: Path) -> None:
    marker = {"version": 1, "kind": "keychain", "backend": "Secret Service", "id": "0123456789abcdef"}
    (data_dir / MARKER_FILE).write_text(json.dumps(marker))


def test_auto_is_the_secret_service_when_one_answers(
    keychain: SecretServiceSession, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", keychain.address)
    for mode in ("auto", "keychain"):
        decision = decide_secret_store(mode, str(data_dir))
        assert (decision.kind, decision.backend, decision.refusal) == ("keychain", "Secret Service", None)


def test_without_a_session_bus_auto_is_the_files_and_keychain_refuses(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    assert decide_secret_store("auto", str(data_dir)) == ("file", FILE_BACKEND, None)
    refused = decide_secret_store("keychain", str(data_dir)).refusal
    assert refused is not None and "Secret Service: no session bus" in refused


def test_a_session_bus_that_does_not_answer_is_no_keychain(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=" + str(tmp_path / "no-bus-here"))
    refused = decide_secret_store("keychain", str(data_dir)).refusal
    assert refused is not None and "the session bus does not answer" in refused


def test_a_data_dir_whose_secrets_are_in_the_keychain_keeps_to_it(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mark(data_dir)
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    # auto with the keychain down: still the keychain (a start then fails typed, nothing looks empty)
    assert decide_secret_store("auto", str(data_dir)) == ("keychain", "Secret Service", None)
    refused = decide_secret_store("file", str(data_dir)).refusal
    assert refused is not None and "kept in the OS keychain (Secret Service)" in refused
