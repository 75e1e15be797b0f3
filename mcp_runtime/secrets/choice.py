"""Which secret store a run uses (``--secret-store``, SPEC §14), decided once, in a thread beside start-up.

The ``initialize`` answer names the store, so the decision must not cost an import of ``keyring``: on Linux it asks
the session bus (jeepney, already a dependency of keyring's Secret Service backend) whether a Secret Service (GNOME
Keyring, KWallet 5.97 and later, KeePassXC) is there to answer; on macOS and Windows the OS keychain is part of the
system. Standard library only otherwise: the early ``initialize`` reader waits on it.
"""

from __future__ import annotations

import json
import os
import sys
from typing import NamedTuple

MODES = ("auto", "keychain", "file")
MARKER_FILE = "secret-store.json"
"""In the data dir once a secret was kept in the keychain: the data dir's id (items are scoped to it) and the
backend that holds them."""
FILE_BACKEND = "files in the data dir"
SECRET_SERVICE = "Secret Service"
MACOS = "macOS Keychain"
WINDOWS = "Windows Credential Locker"
_BUS_NAMES = {SECRET_SERVICE: ("org.freedesktop.secrets",)}
_BUS_TIMEOUT_S = 2.0
_MARKER_LIMIT = 4096


class SecretStoreDecision(NamedTuple):
    """The store of this run; ``refusal`` is the one line start-up prints before exiting 2."""

    kind: str
    backend: str
    refusal: str | None = None

    def wire(self) -> dict[str, str]:
        """``initialize.secretStore``."""
        return {"kind": self.kind, "backend": self.backend}


def read_marker(data_dir: str) -> dict[str, str] | None:
    """The data dir's keychain marker, or None (absent, not a regular file, or unreadable)."""
    path = os.path.join(data_dir, MARKER_FILE)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        raw = os.read(fd, _MARKER_LIMIT)
    finally:
        os.close(fd)
    try:
        marker = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(marker, dict) or marker.get("kind") != "keychain":
        return None
    if not all(isinstance(marker.get(key), str) and marker[key] for key in ("id", "backend")):
        return None
    return {"id": marker["id"], "backend": marker["backend"]}


def probe() -> tuple[str | None, list[str]]:
    """The OS keychain that answers here, else None with why each candidate did not."""
    if sys.platform == "darwin":
        return MACOS, []
    if sys.platform == "win32":
        return WINDOWS, []
    address = os.environ.get("DBUS_SESSION_BUS_ADDRESS")
    if not address:
        return None, [f"{name}: no session bus (DBUS_SESSION_BUS_ADDRESS is unset)" for name in _BUS_NAMES]
    try:
        names = _bus_names()
    except Exception as exc:  # any failure to reach the bus is a keychain that does not answer
        return None, [f"{name}: the session bus does not answer ({type(exc).__name__})" for name in _BUS_NAMES]
    tried = []
    for backend, wanted in _BUS_NAMES.items():
        if names & set(wanted):
            return backend, []
        tried.append(f"{backend}: nothing serves {' or '.join(wanted)} on the session bus")
    return None, tried


def _bus_names() -> set[str]:
    """The names owned or activatable on the session bus."""
    from jeepney import DBusAddress, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    bus = DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus")
    connection = open_dbus_connection(bus="SESSION")
    try:
        found: set[str] = set()
        for method in ("ListNames", "ListActivatableNames"):
            reply = connection.send_and_get_reply(new_method_call(bus, method), timeout=_BUS_TIMEOUT_S)
            found.update(reply.body[0])
        return found
    finally:
        connection.close()


def decide(mode: str, data_dir: str) -> SecretStoreDecision:
    """``auto``: the keychain when one answers (or when this data dir's secrets are already there, so a keychain
    that is down fails typed instead of looking empty), else the files; ``keychain``: one must answer;
    ``file``: refused for a data dir whose secrets are in the keychain."""
    marker = read_marker(data_dir)
    if mode == "file":
        if marker is not None:
            refusal = (
                f"--secret-store file: the secrets of {data_dir} are kept in the OS keychain ({marker['backend']}); "
                "start with --secret-store keychain or auto"
            )
            return SecretStoreDecision("file", FILE_BACKEND, refusal)
        return SecretStoreDecision("file", FILE_BACKEND)
    backend, tried = probe()
    if backend is not None:
        return SecretStoreDecision("keychain", backend)
    if mode == "keychain":
        return SecretStoreDecision(
            "keychain", "none", f"--secret-store keychain: no OS keychain answers (tried {'; '.join(tried)})"
        )
    if marker is not None:
        return SecretStoreDecision("keychain", marker["backend"])
    return SecretStoreDecision("file", FILE_BACKEND)


def decide_secret_store(mode: str, data_dir: str) -> SecretStoreDecision:
    """:func:`decide`, never raising: a probe that failed is the file store (``auto``) or a refusal."""
    try:
        return decide(mode, data_dir)
    except Exception as exc:
        refusal = f"--secret-store {mode}: the OS keychain could not be probed ({type(exc).__name__})"
        return SecretStoreDecision("file", FILE_BACKEND, refusal if mode != "auto" else None)
