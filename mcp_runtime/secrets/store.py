"""The secret store interface, its file implementation, and the store this run uses.

A store turns a secret into what a file records (``keep``), back (``reveal``), and drops it (``forget``). The file
store records the value itself in the 0600 file that holds it (``mcps.json``, ``credentials.json``); the keychain
records a reference (``keychain:<token>``) and keeps the value in the OS keychain. Every call may block (a D-Bus
round trip, a keychain prompt): callers run them in a worker thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol

from mcp_runtime.secrets.choice import FILE_BACKEND, Decision

REFERENCE_PREFIX = "keychain:"


def is_reference(recorded: str) -> bool:
    return recorded.startswith(REFERENCE_PREFIX)


class SecretStore(Protocol):
    """Where the secrets of one data dir are kept; ``field`` names the secret within its server (``env.API_KEY``,
    ``headers.X-Api-Key``, ``oauth.clientSecret``, ``oauth <url>``)."""

    kind: Literal["keychain", "file"]
    backend: str

    def keep(self, server: str, field: str, value: str) -> str:
        """Store ``value`` under a fresh item; what the file records instead (written before the file is)."""
        ...

    def reveal(self, server: str, field: str, recorded: str) -> str:
        """The value a file's record stands for (``missingSecret``, ``secretStoreLocked``)."""
        ...

    def forget(self, server: str, field: str, recorded: str) -> None:
        """Drop the item a record stands for (after the file no longer records it); absent items are fine."""
        ...


class FileSecretStore:
    """The 0600 files themselves: the value is what the file records."""

    kind: Literal["keychain", "file"] = "file"
    backend = FILE_BACKEND

    def keep(self, server: str, field: str, value: str) -> str:
        return value

    def reveal(self, server: str, field: str, recorded: str) -> str:
        return recorded

    def forget(self, server: str, field: str, recorded: str) -> None:
        return None


_store: SecretStore = FileSecretStore()


def secret_store() -> SecretStore:
    """The store of this run (the file store until start-up sets another)."""
    return _store


def secret_store_info() -> dict[str, str]:
    """``initialize.secretStore``: the kind and backend of this run's store."""
    return {"kind": _store.kind, "backend": _store.backend}


def use_secret_store(decision: Decision, data_dir: Path) -> None:
    """Start-up: the store ``--secret-store`` decided on (the keychain's module loads ``keyring`` only when a
    secret is first kept or read)."""
    global _store
    if decision.kind == "keychain":
        from mcp_runtime.secrets.keychain import KeychainSecretStore

        _store = KeychainSecretStore(decision.backend, data_dir)
    else:
        _store = FileSecretStore()
