"""The ``--listen unix:PATH`` socket: claimed only when free or stale, capped, and removed only while it is ours."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import stat
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskStatus

from app_server.process.logs import get_logger
from app_server.wire import envelope
from app_server.wire.connection import ClientConnection
from app_server.wire.transport import Transport
from protocol.jsonrpc import AppError

if TYPE_CHECKING:
    from app_server.wire.trace import Trace

log = get_logger("app_server.listener")
MAX_CONNECTIONS = 64
PROBE_TIMEOUT_S = 1.0


class SocketRefused(Exception):
    """The path cannot be ours; the message is the one-line reason printed before exit 2."""


def bind(path: Path) -> socket.socket:
    """Claim the path (refusing a non-socket or a live daemon's socket, replacing a stale one) and bind a 0600
    listening socket there; every failure is a ``SocketRefused`` with a one-line reason."""
    claim(path)
    listener = _unix_socket()
    old_umask = os.umask(0o177)
    try:
        listener.bind(str(path))
        listener.listen(MAX_CONNECTIONS)
    except OSError as exc:
        listener.close()
        raise SocketRefused(f"cannot listen on {path}: {exc.strerror or exc}") from exc
    finally:
        os.umask(old_umask)
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    return listener


def claim(path: Path) -> None:
    """Refuse a path that is not a socket or where a daemon answers; remove a stale socket."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise SocketRefused(f"cannot inspect {path}: {exc.strerror}") from exc
    if not stat.S_ISSOCK(info.st_mode):
        raise SocketRefused(f"{path} exists and is not a socket")
    probe = _unix_socket()
    probe.settimeout(PROBE_TIMEOUT_S)
    try:
        probe.connect(str(path))
    except (ConnectionRefusedError, FileNotFoundError):
        path.unlink(missing_ok=True)
        return
    except OSError as exc:
        raise SocketRefused(f"cannot probe {path}: {exc.strerror or exc}") from exc
    finally:
        probe.close()
    raise SocketRefused(f"a daemon is already listening on {path}")


def _unix_socket() -> socket.socket:
    if sys.platform == "win32":
        raise SocketRefused("Unix sockets are not supported on Windows")
    return socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)


def _release(path: Path, identity: tuple[int, int]) -> None:
    """Unlink the socket only if it is still the one we bound (another daemon may have replaced it)."""
    with contextlib.suppress(OSError):
        info = path.lstat()
        if (info.st_dev, info.st_ino) == identity:
            path.unlink()


async def serve(
    listener: socket.socket,
    path: Path,
    spool_dir: Path,
    trace: Trace | None,
    serve_connection: Callable[[ClientConnection], Awaitable[None]],
    *,
    task_status: TaskStatus,
) -> None:
    """Accept client connections on the bound socket, each served by ``serve_connection`` like stdio, at most
    ``MAX_CONNECTIONS`` at once (more are answered ``overloaded`` and closed)."""
    if sys.platform == "win32":  # bind refused it already
        raise SocketRefused("Unix sockets are not supported on Windows")
    counter = 0
    open_connections = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal counter, open_connections
        if open_connections >= MAX_CONNECTIONS:
            refusal = AppError("overloaded", f"at most {MAX_CONNECTIONS} socket connections; retry later")
            refused = envelope.error(None, refusal)
            if trace is not None:
                trace.outgoing("unix-refused", refused)
            writer.write(refused)
            writer.close()
            return
        counter += 1
        open_connections += 1
        label = f"unix-{counter}"
        log.info("client_connected", connection=label, open=open_connections)
        try:
            await serve_connection(ClientConnection(label, Transport(reader, writer, spool_dir)))
        finally:
            open_connections -= 1
            writer.close()
            log.info("client_disconnected", connection=label, open=open_connections)

    info = path.lstat()
    server = await asyncio.start_unix_server(handle, sock=listener)
    task_status.started()
    try:
        async with server:
            await anyio.sleep_forever()
    finally:
        _release(path, (info.st_dev, info.st_ino))
