"""The secret store this run uses: the file store until start-up sets the one ``--secret-store`` decided on."""

from __future__ import annotations

from pathlib import Path

from mcp_runtime.secrets.base import FileSecretStore, SecretStore
from mcp_runtime.secrets.choice import SecretStoreDecision

_store: SecretStore = FileSecretStore()


def secret_store() -> SecretStore:
    """The store of this run (the file store until start-up sets another)."""
    return _store


def secret_store_info() -> dict[str, str]:
    """``initialize.secretStore``: the kind and backend of this run's store."""
    return {"kind": _store.kind, "backend": _store.backend}


def use_secret_store(decision: SecretStoreDecision, data_dir: Path) -> None:
    """Start-up: the store ``--secret-store`` decided on (the keychain's module loads ``keyring`` only when a
    secret is first kept or read)."""
    global _store
    if decision.kind == "keychain":
        from mcp_runtime.secrets.keychain import KeychainSecretStore

        _store = KeychainSecretStore(decision.backend, data_dir)
    else:
        _store = FileSecretStore()
