"""The secret store this run uses: the file store until start-up sets the one ``--secret-store`` decided on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mcp_runtime.secrets.base import FileSecretStore, SecretStore
from mcp_runtime.secrets.choice import SecretStoreDecision
from protocol.config import McpServerConfig

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



AppSecrets = Callable[[str, McpServerConfig], dict[str, str]]
"""Field → recorded value of the app's config of a server, when it has the destination of the config given."""
_app_secrets: AppSecrets | None = None


def use_app_secrets(lookup: AppSecrets) -> None:
    """Set by the daemon with its threads: what a thread record's ``***`` stands for (the app's current values)."""
    global _app_secrets
    _app_secrets = lookup


def app_secrets(name: str, config: McpServerConfig) -> dict[str, str]:
    """:data:`AppSecrets` of this run (nothing before the daemon sets it); blocks."""
    return _app_secrets(name, config) if _app_secrets is not None else {}
