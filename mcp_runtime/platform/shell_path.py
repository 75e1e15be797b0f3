"""The user's login-shell ``PATH`` (SPEC §10 ``--path-from-shell``): what a GUI-launched daemon lacks to find
``npx``, ``uvx`` or ``node`` from nvm or Homebrew.

A login shell can take seconds to run a profile, so the last ``PATH`` read is kept in the data dir (0600, with the
shell it came from) and used at once on the next launch; the shell is read again once per launch (never by a
daemon that starts no stdio server), bounded, and ignored whenever it fails, hangs or prints something that is not
a ``PATH``. Only a start whose command is found on neither the daemon's ``PATH`` nor the kept one waits for that
read. The value is taken from between two random markers, so whatever the user's profile prints around it is
never mistaken for it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import anyio

from protocol.encoding import compact
from protocol.jsonrpc import AppError

READ_TIMEOUT_S = 3.0
"""The whole read: a shell still running then is killed with its process group, and nothing is added."""
MAX_OUTPUT = 1 << 20
"""Bytes of the shell's stdout kept at most (a profile that prints more is ignored)."""
MAX_PATH = 1 << 16


def login_shell(env: Mapping[str, str]) -> str | None:
    """``$SHELL``, else the user's shell in the password database; None when neither names an absolute program."""
    shell = env.get("SHELL", "")
    if not os.path.isabs(shell) and sys.platform != "win32":
        import pwd

        with contextlib.suppress(KeyError, OSError):
            shell = pwd.getpwuid(os.getuid()).pw_shell
    return shell if os.path.isabs(shell) and os.access(shell, os.X_OK) else None


def parse(output: bytes, marker: bytes) -> tuple[str, ...]:
    """The absolute folders of the ``PATH`` printed between two ``marker``; () for anything else."""
    parts = output.split(marker)
    if len(parts) < 3:
        return ()
    value = parts[1].removesuffix(b"\n")
    if not value or len(value) > MAX_PATH or any(byte in value for byte in b"\0\n\r"):
        return ()
    try:
        text = value.decode()
    except UnicodeDecodeError:
        return ()
    folders: list[str] = []
    for folder in text.split(os.pathsep):
        if os.path.isabs(folder) and folder not in folders:
            folders.append(folder)
    return tuple(folders)


async def read_login_path(env: Mapping[str, str]) -> tuple[str, ...]:
    """Run ``$SHELL -ilc`` with ``env`` once and return the folders of the ``PATH`` it prints; () when it fails in
    any way."""
    shell = login_shell(env)
    if shell is None or sys.platform == "win32":
        return ()
    marker = f"__mcp_app_server_{os.urandom(8).hex()}__".encode()
    script = f"printf '%s' {marker.decode()}; printenv PATH; printf '%s' {marker.decode()}"
    try:
        # Its own session: no terminal to stop it, and a process group of its own to kill once it is read.
        process = await anyio.open_process(
            [shell, "-ilc", script],
            stdin=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=dict(env),
            start_new_session=True,
        )
    except OSError:
        return ()
    output = bytearray()
    try:
        with anyio.move_on_after(READ_TIMEOUT_S):
            assert process.stdout is not None
            async for chunk in process.stdout:  # a profile's background job may hold stdout open: stop at the end
                output += chunk
                if len(output) > MAX_OUTPUT or output.count(marker) >= 2:
                    break
    finally:
        with anyio.CancelScope(shield=True):
            # Read (or past the bound): the shell goes, with whatever the profile left running in its group (no
            # job control, so background jobs stay in it).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.aclose()
    return parse(bytes(output), marker) if len(output) <= MAX_OUTPUT else ()


KEPT_FILE = "login-path.json"
KEPT_VERSION = 1


class LoginPath:
    """The login shell's folders: the ones kept from an earlier launch, and this launch's one fresh read, made by
    the first caller that needs it (others wait for it; a read cancelled with its caller is made again)."""

    def __init__(self) -> None:
        self._data_dir: Path | None = None
        self._kept: tuple[str, ...] | None = None
        self._fresh: tuple[str, ...] | None = None
        self._reading: anyio.Event | None = None

    def keep_in(self, data_dir: Path) -> None:
        """Where the last read is kept (the daemon's data dir); read on first use."""
        self._data_dir = data_dir

    def known(self, env: Mapping[str, str]) -> tuple[str, ...] | None:
        """This launch's read, else the one kept from the last launch of the same shell, without waiting; None when
        neither exists yet."""
        if self._fresh is not None:
            return self._fresh
        if self._kept is None and self._data_dir is not None:
            self._kept = _load(self._data_dir, login_shell(env))
        return self._kept or None

    async def fresh(self, env: Mapping[str, str]) -> tuple[str, ...]:
        """This launch's read of the login shell (made once; kept for the next launch when it found folders)."""
        while self._fresh is None:
            if self._reading is not None:
                await self._reading.wait()
                continue
            self._reading = reading = anyio.Event()
            try:
                folders = await read_login_path(env)
                self._fresh = folders
                if folders and self._data_dir is not None and folders != self._kept:
                    await anyio.to_thread.run_sync(_keep, self._data_dir, login_shell(env), folders)
            finally:
                self._reading = None
                reading.set()
        return self._fresh


def _load(data_dir: Path, shell: str | None) -> tuple[str, ...]:
    """The folders kept by the last launch, when they came from ``shell``; () otherwise (missing, unreadable,
    another shell's)."""
    import json

    from mcp_runtime.storage import safe_fs

    try:
        data = safe_fs.read_file(data_dir, KEPT_FILE, MAX_PATH * 2)
        kept = json.loads(data) if data is not None else None
    except (OSError, ValueError, AppError):
        return ()
    if not isinstance(kept, dict) or kept.get("version") != KEPT_VERSION or kept.get("shell") != shell:
        return ()
    folders = kept.get("path")
    if not isinstance(folders, list) or not all(isinstance(f, str) and os.path.isabs(f) for f in folders):
        return ()
    return tuple(folders)


def _keep(data_dir: Path, shell: str | None, folders: tuple[str, ...]) -> None:
    """In a worker thread: the read, for the next launch (atomic, 0600; a failure only costs that launch a wait)."""
    from mcp_runtime.storage import safe_fs

    document = {"version": KEPT_VERSION, "shell": shell, "path": list(folders)}
    with contextlib.suppress(OSError, AppError):
        safe_fs.write_file(data_dir, KEPT_FILE, compact(document) + b"\n")


LOGIN_PATH = LoginPath()


def keep_login_path(data_dir: Path) -> None:
    """The daemon's data dir keeps the login shell's last ``PATH`` for the next launch."""
    LOGIN_PATH.keep_in(data_dir)
