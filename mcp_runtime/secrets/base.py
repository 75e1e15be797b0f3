"""The secret store interface and its file implementation.

A store turns a secret into what a file records (``keep``), back (``reveal``), and drops it (``forget``). The file
store records the value itself in the 0600 file that holds it (``mcps.json``, ``credentials.json``); the keychain
records a reference (``keychain:<token>``) and keeps the value in the OS keychain. Every call may block (a D-Bus
round trip, a keychain prompt): callers run them in a worker thread.
"""

from __future__ import annotations

from typing import Literal, Protocol

from mcp_runtime.secrets.choice import FILE_BACKEND

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

    def check(self) -> None:
        """Raise ``secretStoreLocked`` unless items can be read and removed now (before a delete begins)."""
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

    def check(self) -> None:
        return None
