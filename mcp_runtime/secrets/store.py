"""The secret store this run uses: the file store until start-up sets the one ``--secret-store`` decided on."""

from __future__ import annotations

from pathlib import Path

from mcp_runtime.secrets.base import FileSecretStore, SecretStore
from mcp_runtime.secrets.choice import SecretStoreDecision
from protocol.config import McpServerConfig

_store: SecretStore = FileSecretStore()
_data_dir: Path | None = None


def secret_store() -> SecretStore:
    """The store of this run (the file store until start-up sets another)."""
    return _store


def secret_store_info() -> dict[str, str]:
    """``initialize.secretStore``: the kind and backend of this run's store."""
    return {"kind": _store.kind, "backend": _store.backend}


def use_secret_store(decision: SecretStoreDecision, data_dir: Path) -> None:
    """Start-up: the store ``--secret-store`` decided on (the keychain's module loads ``keyring`` only when a
    secret is first kept or read)."""
    global _store, _data_dir
    _data_dir = data_dir
    if decision.kind == "keychain":
        from mcp_runtime.secrets.keychain import KeychainSecretStore

        _store = KeychainSecretStore(decision.backend, data_dir)
    else:
        _store = FileSecretStore()


def stored_config(name: str) -> McpServerConfig | None:
    """The app's stored config of ``name`` now (a thread's record names its secrets by ``***``: the app's current
    ones are what its servers get), or None; blocks (one small file)."""
    if _data_dir is None:
        return None
    from mcp_runtime.storage.store import ConfigStore
    from protocol.jsonrpc import AppError

    try:
        server = ConfigStore(_data_dir).get(name)
    except AppError:
        return None
    return server.config if server is not None else None
