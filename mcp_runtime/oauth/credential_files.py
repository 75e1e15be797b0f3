"""Credential files the host keeps for the daemon (``idp.idTokenFile``, ``assertionFile``): read only inside the
folders the host named at start (``--credential-dir``), only as regular files, and only a JWT is handed on.

A config could otherwise make the daemon send any file it can read (a private key, ``/proc/self/environ``) to an
endpoint the config names, and a FIFO or a terminal as the path would hold a worker thread for good. So every
component is opened without following links, the last one without blocking, and reads run on their own few
threads: a stuck read waits there, never in the pool the rest of the daemon shares.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import stat
import sys
from collections.abc import Callable

import anyio

from mcp_runtime.config.policy import policy
from mcp_runtime.config.sources import credential_location
from protocol.jsonrpc import AppError

MAX_CREDENTIAL_BYTES = 64 * 1024
READ_THREADS = 2
"""How many credential reads may hold a thread at once; more wait for one, never for a thread of the shared pool."""
READ_WAIT_S = 5.0
_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")
_NO_LINK_NO_WAIT = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NO_LINK_NO_WAIT
_FILE_FLAGS = os.O_RDONLY | getattr(os, "O_NOCTTY", 0) | _NO_LINK_NO_WAIT
_limiter: anyio.CapacityLimiter | None = None

Unavailable = Callable[[str], AppError]
"""Builds the grant's typed error from a plain description of why the credential cannot be used."""


def _open_inside(folder: str, relative: str) -> int:
    """A descriptor for ``relative`` under ``folder``, walked one component at a time without following a link."""
    parts = relative.split("/")
    directory = os.open(folder, _DIRECTORY_FLAGS)
    try:
        for part in parts[:-1]:
            inner = os.open(part, _DIRECTORY_FLAGS, dir_fd=directory)
            os.close(directory)
            directory = inner
        return os.open(parts[-1], _FILE_FLAGS, dir_fd=directory)
    finally:
        os.close(directory)


def _read(folder: str, relative: str, field: str, unavailable: Unavailable) -> str:
    try:
        descriptor = _open_inside(folder, relative)
    except FileNotFoundError:
        raise unavailable(f"{field} names a file that does not exist") from None
    except OSError:
        raise unavailable(f"{field} names a file that cannot be opened (a link, or not readable)") from None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise unavailable(f"{field} is not a regular file")
        if sys.platform != "win32":
            os.set_blocking(descriptor, True)
        raw = os.read(descriptor, MAX_CREDENTIAL_BYTES + 1)
    except OSError:
        raise unavailable(f"{field} names a file that cannot be read") from None
    finally:
        os.close(descriptor)
    if len(raw) > MAX_CREDENTIAL_BYTES:
        raise unavailable(f"{field} is larger than {MAX_CREDENTIAL_BYTES} bytes")
    try:
        return raw.decode("ascii").strip()
    except UnicodeDecodeError:
        raise unavailable(f"{field} does not hold a token (not ASCII)") from None


async def read_credential_file(path: str, field: str, unavailable: Unavailable) -> str:
    """The file's content now, read on the credential threads; typed errors for a path the host did not allow, a
    file that is not a regular one, one too large, or a read that did not finish within a few seconds."""
    global _limiter
    folder, relative = credential_location(path, field, policy().credential_dirs)
    if _limiter is None:
        _limiter = anyio.CapacityLimiter(READ_THREADS)
    try:
        with anyio.fail_after(READ_WAIT_S):
            return await anyio.to_thread.run_sync(_read, folder, relative, field, unavailable, limiter=_limiter)
    except TimeoutError:
        raise unavailable(f"{field} could not be read in time") from None


def _json_object(segment: str) -> dict[str, object] | None:
    try:
        value = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (binascii.Error, ValueError):
        return None
    return value if isinstance(value, dict) else None


def check_jwt_shape(value: str, field: str, unavailable: Unavailable) -> None:
    """A JWT (header.payload.signature, base64url, header and payload JSON objects, the header naming ``alg``)
    or the typed error: whatever else a file or variable holds is never sent to an endpoint."""
    parts = value.split(".")
    if len(parts) != 3 or not all(_SEGMENT.fullmatch(part) for part in parts[:2]):
        raise unavailable(f"{field} does not hold a JWT")
    if parts[2] and not _SEGMENT.fullmatch(parts[2]):
        raise unavailable(f"{field} does not hold a JWT")
    header, payload = _json_object(parts[0]), _json_object(parts[1])
    if header is None or payload is None or not isinstance(header.get("alg"), str):
        raise unavailable(f"{field} does not hold a JWT")
