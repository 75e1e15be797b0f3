"""The user's login-shell ``PATH`` (SPEC §10 ``--path-from-shell``): what a GUI-launched daemon lacks to find
``npx``, ``uvx`` or ``node`` from nvm or Homebrew.

Read once, on the first stdio start that needs it (a daemon that starts no stdio server never runs the shell),
bounded, and ignored whenever the shell fails, hangs or prints something that is not a ``PATH``. The value is
taken from between two random markers, so whatever the user's profile prints around it is never mistaken for it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping

import anyio

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


class LoginPath:
    """The login shell's folders, read by the first stdio start that asks; starts meanwhile wait for that read,
    and a read cancelled with its start is made again by the next one."""

    def __init__(self) -> None:
        self._folders: tuple[str, ...] | None = None
        self._reading: anyio.Event | None = None

    async def folders(self, env: Mapping[str, str]) -> tuple[str, ...]:
        while self._folders is None:
            if self._reading is not None:
                await self._reading.wait()
                continue
            self._reading = reading = anyio.Event()
            try:
                self._folders = await read_login_path(env)
            finally:
                self._reading = None
                reading.set()
        return self._folders


LOGIN_PATH = LoginPath()
