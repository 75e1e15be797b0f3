"""File plumbing for writing other apps' configs: bounded reads, locks, backups and atomic replacement."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from filelock import Timeout

from mcp_runtime.storage import safe_fs as _safe_fs
from protocol.jsonrpc import AppError


class UnparsableFile(Exception):
    """An app's config file is not valid in its format (or not the expected shape); it is never rewritten."""


# App configs can be large (~/.claude.json keeps per-project history); refuse anything beyond this.
MAX_APP_CONFIG_BYTES = 16 * 1024 * 1024
LOCK_TIMEOUT_S = 10.0
BACKUPS_KEPT = 10
NEW_FILE_MODE = 0o600


def _not_regular(path: Path) -> AppError:
    return AppError("notARegularFile", f"{path} is not a regular file; it was not read", path=str(path))


def _too_large(path: Path) -> AppError:
    return AppError("configTooLarge", f"{path} is larger than {MAX_APP_CONFIG_BYTES} bytes", path=str(path))


def read_text(path: Path) -> str | None:
    """The file's text, or None when it does not exist; typed errors for size, encoding and I/O.

    Only a regular file is read: a FIFO, a device or ``/proc/self/fd/0`` is refused (``notARegularFile``)
    before it is opened, and the open is non-blocking so a file swapped for a FIFO meanwhile cannot block.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise _not_regular(path)
        fd = os.open(path, os.O_RDONLY | _safe_fs.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.EISDIR):
            raise _not_regular(path) from exc
        raise AppError("internal", f"cannot read {path}: {exc.strerror}", path=str(path)) from exc
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise _not_regular(path)
        if opened.st_size > MAX_APP_CONFIG_BYTES:
            raise _too_large(path)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_APP_CONFIG_BYTES + 1)
    except OSError as exc:
        raise AppError("internal", f"cannot read {path}: {exc.strerror}", path=str(path)) from exc
    finally:
        os.close(fd)
    if len(data) > MAX_APP_CONFIG_BYTES:
        raise _too_large(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnparsableFile(f"{path} is not UTF-8 text") from exc


def real_path(path: Path) -> Path:
    """The file a write really lands in: symlinks (dotfile managers) are followed, not replaced."""
    return Path(os.path.realpath(path))


@contextlib.contextmanager
def locked(data_dir: Path, target: Path) -> Iterator[None]:
    """Serialize writers of ``target`` through a lock kept in our data dir, not next to the app's file."""
    digest = hashlib.sha256(str(target).encode()).hexdigest()[:24]
    try:
        with _safe_fs.lock(data_dir, f"locks/app-{digest}.lock", LOCK_TIMEOUT_S):
            yield
    except Timeout as exc:
        raise AppError("serverBusy", f"another writer holds the lock for {target}") from exc


def atomic_write(path: Path, data: bytes, *, mode: int | None) -> None:
    """The store's atomic replace (temp file, fsync, rename, fsync the folder), keeping the file's mode.

    ``path`` is an app's resolved config path (no symlink left in it): its folder is the trusted root.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    _safe_fs.write_file(path.parent, path.name, data, NEW_FILE_MODE if mode is None else mode)


def file_mode(path: Path) -> int | None:
    """Permission bits of an existing file (kept on rewrite), None when it does not exist."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return None


def backup(data_dir: Path, app: str, path: Path, data: bytes) -> Path:
    """Save the previous content under ``<dataDir>/backups/<app>/`` (0600), keeping the newest few."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    with _safe_fs.directory(data_dir, ["backups", app]) as folder:
        names = set(os.listdir(folder))
        name = f"{stamp}-{path.name}"
        counter = 0
        while name in names:
            counter += 1
            name = f"{stamp}-{counter}-{path.name}"
        _safe_fs.write_file(data_dir, f"backups/{app}/{name}", data)
        olds = sorted(n for n in names | {name} if n.endswith(f"-{path.name}") and not n.startswith("."))
        for old in olds[:-BACKUPS_KEPT]:
            with contextlib.suppress(OSError):
                os.unlink(old, dir_fd=folder)
    return data_dir / "backups" / app / name
