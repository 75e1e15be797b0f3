"""A real freedesktop Secret Service for tests: a private session bus with GNOME Keyring on it, its login keyring
created and unlocked with a password given on stdin (``make gnome-keyring`` installs Debian's packages).

Each session is its own ``dbus-daemon --session`` and ``gnome-keyring-daemon`` under a fresh ``HOME``, so tests never
touch the user's keychain and never share items; the daemon under test gets the bus address in its environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SECRETS_NAME = "org.freedesktop.secrets"
READY_TIMEOUT_S = 20.0
PACKAGES = "gnome-keyring dbus dbus-x11"
LOGIN_PASSWORD = "test-login-password"


class SecretServiceMissing(RuntimeError):
    """GNOME Keyring or D-Bus is not installed (``make gnome-keyring``)."""


@dataclass
class SecretServiceSession:
    address: str
    home: Path

    def env(self) -> dict[str, str]:
        """What a process needs to find this Secret Service (and nothing of the user's)."""
        return {"DBUS_SESSION_BUS_ADDRESS": self.address}

    @contextmanager
    def connection(self) -> Iterator[Any]:
        from jeepney.io.blocking import open_dbus_connection

        connection = open_dbus_connection(bus=self.address)
        try:
            yield connection
        finally:
            connection.close()

    def items(self, label_part: str) -> list[tuple[str, str]]:
        """(label, secret) of each item whose label contains ``label_part`` (the test reads the keychain)."""
        import secretstorage

        with self.connection() as connection:
            collection = secretstorage.get_default_collection(connection)
            return [
                (item.get_label(), item.get_secret().decode())
                for item in collection.get_all_items()
                if label_part in item.get_label()
            ]

    def labels(self, label_part: str) -> list[str]:
        """The labels of the items whose label contains ``label_part``: readable while the keychain is locked."""
        import secretstorage

        with self.connection() as connection:
            collection = secretstorage.get_default_collection(connection)
            return [item.get_label() for item in collection.get_all_items() if label_part in item.get_label()]

    def delete_items(self, label_part: str) -> int:
        """Remove items behind the daemon's back, as a person in Seahorse would."""
        import secretstorage

        with self.connection() as connection:
            collection = secretstorage.get_default_collection(connection)
            found = [item for item in collection.get_all_items() if label_part in item.get_label()]
            for item in found:
                item.delete()
            return len(found)

    def lock(self) -> None:
        """Lock the login collection (unlocking it again would need a person at a prompt)."""
        import secretstorage

        with self.connection() as connection:
            collection = secretstorage.get_default_collection(connection)
            collection.lock()
            assert collection.is_locked()

    def unlock(self) -> None:
        """Unlock the login collection without a prompt, as a person typing the password would (GNOME Keyring's
        own interface for its tools: ``UnlockWithMasterPassword`` with the secret sent in a ``plain`` session)."""
        import secretstorage
        from jeepney import DBusAddress, new_method_call

        service = DBusAddress(
            "/org/freedesktop/secrets", bus_name=SECRETS_NAME, interface="org.freedesktop.Secret.Service"
        )
        with self.connection() as connection:
            collection = secretstorage.get_default_collection(connection)
            opened = connection.send_and_get_reply(
                new_method_call(service, "OpenSession", "sv", ("plain", ("s", ""))), timeout=READY_TIMEOUT_S
            )
            session = opened.body[1]
            guilt = DBusAddress(
                "/org/freedesktop/secrets",
                bus_name=SECRETS_NAME,
                interface="org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface",
            )
            secret = (session, b"", LOGIN_PASSWORD.encode(), "text/plain")
            call = new_method_call(guilt, "UnlockWithMasterPassword", "o(oayays)", (collection.collection_path, secret))
            connection.send_and_get_reply(call, timeout=READY_TIMEOUT_S)
            assert not collection.is_locked()


def _wait_for_name(address: str, name: str, timeout_s: float) -> None:
    """Until ``name`` has an owner on the bus: its ``NameOwnerChanged`` signal, or an owner already there."""
    from jeepney import DBusAddress, MatchRule, message_bus, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    bus = DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus")
    rule = MatchRule(
        type="signal", sender="org.freedesktop.DBus", interface="org.freedesktop.DBus", member="NameOwnerChanged"
    )
    rule.add_arg_condition(0, name)
    connection = open_dbus_connection(bus=address)
    try:
        with connection.filter(rule) as signals:
            connection.send_and_get_reply(message_bus.AddMatch(rule), timeout=timeout_s)
            owned = connection.send_and_get_reply(new_method_call(bus, "NameHasOwner", "s", (name,)), timeout=timeout_s)
            if not owned.body[0]:
                connection.recv_until_filtered(signals, timeout=timeout_s)
    finally:
        connection.close()


@contextmanager
def secret_service(root: Path) -> Iterator[SecretServiceSession]:
    """A session bus and an unlocked GNOME Keyring under ``root``; both are stopped (and reaped) on exit."""
    for program in ("dbus-daemon", "gnome-keyring-daemon"):
        if shutil.which(program) is None:
            raise SecretServiceMissing(f"{program} is not installed: run `make gnome-keyring` (Debian: {PACKAGES})")
    home = root / "home"
    runtime = root / "run"
    for folder in (home, runtime):
        folder.mkdir(mode=0o700, parents=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_RUNTIME_DIR": str(runtime),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }
    bus = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    keyring: subprocess.Popen[bytes] | None = None
    try:
        assert bus.stdout is not None
        address = bus.stdout.readline().decode().strip()
        if not address:
            raise RuntimeError("dbus-daemon printed no address")
        keyring = subprocess.Popen(
            ["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**env, "DBUS_SESSION_BUS_ADDRESS": address},
        )
        assert keyring.stdin is not None
        keyring.stdin.write(LOGIN_PASSWORD.encode())  # --unlock reads the login keyring's password from stdin
        keyring.stdin.close()
        _wait_for_name(address, SECRETS_NAME, READY_TIMEOUT_S)
        yield SecretServiceSession(address, home)
    finally:
        for process in (keyring, bus):
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
