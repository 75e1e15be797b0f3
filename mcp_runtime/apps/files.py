"""File plumbing for writing other apps' configs: bounded reads, locks, backups and atomic replacement."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

from mcp_runtime.store import write_atomic
from protocol.jsonrpc import AppError


class UnparsableFile(Exception):
    """An app's config file is not valid in its format (or not the expected shape); it is never rewritten."""


# App configs can be large (~/.claude.json keeps per-project history); refuse anything beyond this.
MAX_APP_CONFIG_BYTES = 16 * 1024 * 1024
LOCK_TIMEOUT_S = 10.0
BACKUPS_KEPT = 10
NEW_FILE_MODE = 0o600


def read_text(path: Path) -> str | None:
    """The file's text, or None when it does not exist; typed errors for size, encoding and I/O."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_APP_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise AppError("invalidParams", f"{path} is a directory", path=str(path)) from exc
    except OSError as exc:
        raise AppError("internal", f"cannot read {path}: {exc.strerror}", path=str(path)) from exc
    if len(data) > MAX_APP_CONFIG_BYTES:
        raise AppError("configTooLarge", f"{path} is larger than {MAX_APP_CONFIG_BYTES} bytes", path=str(path))
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
    lock_dir = data_dir / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        with FileLock(str(lock_dir / f"app-{digest}.lock"), timeout=LOCK_TIMEOUT_S):
            yield
    except Timeout as exc:
        raise AppError("serverBusy", f"another writer holds the lock for {target}") from exc


def atomic_write(path: Path, data: bytes, *, mode: int | None) -> None:
    """The store's atomic replace (temp file, fsync, rename, fsync the folder), keeping the file's mode."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(path, data, NEW_FILE_MODE if mode is None else mode)


def file_mode(path: Path) -> int | None:
    """Permission bits of an existing file (kept on rewrite), None when it does not exist."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return None


def backup(data_dir: Path, app: str, path: Path, data: bytes) -> Path:
    """Save the previous content under ``<dataDir>/backups/<app>/`` (0600), keeping the newest few."""
    folder = data_dir / "backups" / app
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = folder / f"{stamp}-{path.name}"
    counter = 0
    while target.exists():
        counter += 1
        target = folder / f"{stamp}-{counter}-{path.name}"
    atomic_write(target, data, mode=0o600)
    olds = sorted(p for p in folder.iterdir() if p.name.endswith(f"-{path.name}") and not p.name.startswith("."))
    for old in olds[:-BACKUPS_KEPT]:
        with contextlib.suppress(OSError):
            old.unlink()
    return target
