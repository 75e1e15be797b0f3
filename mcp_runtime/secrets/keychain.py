"""The OS keychain through ``keyring``: macOS Keychain, Windows Credential Locker, the freedesktop Secret Service.

An item's service name says what it is and whose it is, ``mcp-app-server: <server> <field> (<data dir id>)``, so a
person recognises it in Keychain Access or Seahorse and two data dirs never share one; its user name is a fresh
token per value, so a value is written under a new item before any file points at it and the old item is dropped
only once nothing does (a failed or interrupted write never loses the value in use).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from mcp_runtime.secrets.base import REFERENCE_PREFIX, is_reference
from mcp_runtime.secrets.choice import MACOS, MARKER_FILE, SECRET_SERVICE, WINDOWS, read_marker
from protocol.jsonrpc import AppError

if TYPE_CHECKING:
    from keyring.backend import KeyringBackend

T = TypeVar("T")
NAME = "mcp-app-server"


_BACKENDS = {
    MACOS: "keyring.backends.macOS.Keyring",
    WINDOWS: "keyring.backends.Windows.WinVaultKeyring",
    SECRET_SERVICE: "keyring.backends.SecretService.Keyring",
}
"""keyring's backend for each keychain start-up finds (not keyring's own search: it loads every plugin)."""


def _backend_for(name: str) -> KeyringBackend:
    """The backend, checked viable (keyring raises when it is not: a keychain that does not answer)."""
    if name not in _BACKENDS:
        raise AppError("secretStoreLocked", f"no OS keychain answers ({name})", backend=name)
    from keyring.core import load_keyring

    return load_keyring(_BACKENDS[name])


class KeychainSecretStore:
    """Items in the OS keychain, scoped to one data dir; thread-safe (calls come from worker threads)."""

    kind: Literal["keychain", "file"] = "keychain"

    def __init__(self, backend: str, data_dir: Path) -> None:
        self.backend = backend
        self._data_dir = data_dir
        self._lock = threading.Lock()
        self._keyring: KeyringBackend | None = None
        self._id: str | None = None

    def _ring(self) -> KeyringBackend:
        with self._lock:
            if self._keyring is None:
                self._keyring = self._call(lambda: _backend_for(self.backend))
            return self._keyring

    def _data_dir_id(self, create: bool) -> str | None:
        """The id in the data dir's marker; made (with the marker) when the first secret is kept."""
        with self._lock:
            if self._id is None:
                marker = read_marker(str(self._data_dir))
                if marker is not None:
                    self._id = marker["id"]
                elif create:
                    import json

                    from mcp_runtime.storage import safe_fs

                    made = secrets.token_hex(8)
                    document = {"version": 1, "kind": "keychain", "backend": self.backend, "id": made}
                    safe_fs.write_file(self._data_dir, MARKER_FILE, (json.dumps(document, indent=2) + "\n").encode())
                    self._id = made
            return self._id

    def _service(self, server: str, field: str, data_dir_id: str) -> str:
        return f"{NAME}: {server} {field} ({data_dir_id})"

    def _call(self, action: Callable[[], T]) -> T:
        """``action`` with every keychain failure typed: locked or not answering is ``secretStoreLocked``."""
        from keyring.errors import KeyringLocked

        try:
            return action()
        except AppError:
            raise
        except KeyringLocked as exc:
            raise AppError(
                "secretStoreLocked",
                f"the OS keychain ({self.backend}) is locked: unlock it and retry",
                backend=self.backend,
            ) from exc
        except Exception as exc:  # D-Bus, Security framework and Credential Locker errors alike: never the value
            raise AppError(
                "secretStoreLocked",
                f"the OS keychain ({self.backend}) does not answer ({type(exc).__name__}); retry once it does",
                backend=self.backend,
            ) from exc

    def keep(self, server: str, field: str, value: str) -> str:
        """Written, read back and compared: a file records the reference only once the keychain holds the value."""
        data_dir_id = self._data_dir_id(create=True)
        assert data_dir_id is not None
        ring, token = self._ring(), secrets.token_hex(8)
        service = self._service(server, field, data_dir_id)
        self._call(lambda: ring.set_password(service, token, value))
        if self._call(lambda: ring.get_password(service, token)) != value:
            self._forget(ring, service, token)
            raise AppError(
                "secretStoreLocked",
                f"the OS keychain ({self.backend}) did not keep {field} of {server}",
                backend=self.backend,
            )
        return REFERENCE_PREFIX + token

    def reveal(self, server: str, field: str, recorded: str) -> str:
        if not is_reference(recorded):
            return recorded  # kept in the file still (moved in at the next write)
        data_dir_id = self._data_dir_id(create=False)
        value: str | None = None
        if data_dir_id is not None:
            ring, service = self._ring(), self._service(server, field, data_dir_id)
            value = self._call(lambda: ring.get_password(service, recorded[len(REFERENCE_PREFIX) :]))
        if value is None:
            raise AppError(
                "missingSecret",
                f"{field} of server {server!r} is no longer in the OS keychain ({self.backend}): send it again",
                field=field,
                server=server,
            )
        return value

    def forget(self, server: str, field: str, recorded: str) -> None:
        data_dir_id = self._data_dir_id(create=False)
        if not is_reference(recorded) or data_dir_id is None:
            return
        self._forget(self._ring(), self._service(server, field, data_dir_id), recorded[len(REFERENCE_PREFIX) :])

    def check(self) -> None:
        """A read of an item no one keeps: the keychain must open (unlocked) to answer it."""
        ring = self._ring()
        self._call(lambda: ring.get_password(f"{NAME}: unlocked?", "check"))

    def _forget(self, ring: KeyringBackend, service: str, token: str) -> None:
        from keyring.errors import PasswordDeleteError

        try:
            self._call(lambda: ring.delete_password(service, token))
        except AppError as exc:
            if not isinstance(exc.__cause__, PasswordDeleteError):  # already gone is what was wanted
                raise
