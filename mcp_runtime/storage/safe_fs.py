"""The sealed data dir (SPEC §5): folders 0700, files 0600, and no symlink ever followed inside it.

Every path is walked from a trusted root one component at a time with ``O_NOFOLLOW`` and ``dir_fd``-relative
calls, so a planted symlink anywhere on the way is ``unsafePath`` and nothing goes through it; writes are a
fresh temp file, fsynced and renamed, so nothing is ever half-written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from protocol.jsonrpc import AppError

if TYPE_CHECKING:
    from filelock import FileLock

DIR_MODE = 0o700
FILE_MODE = 0o600
OWNER_EXEC_MODE = 0o700
"""A bundled program (SPEC §15): still owner-only, and runnable."""
if sys.platform == "win32":
    # Windows has none of these, nor dir_fd-relative calls (they raise NotImplementedError there): the daemon
    # refuses to serve on Windows, and these only let the module import and type-check.
    O_DIRECTORY = O_NOFOLLOW = O_NONBLOCK = 0
else:
    O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK = os.O_DIRECTORY, os.O_NOFOLLOW, os.O_NONBLOCK
_NOFOLLOW_DIR = os.O_RDONLY | O_DIRECTORY | O_NOFOLLOW
# ``.<name>.<random>.tmp``: ours (16 hex) and the ``tempfile.mkstemp`` names earlier versions used.
_TEMP_NAME = re.compile(r"\..+\.[A-Za-z0-9_]{8,32}\.tmp")
# A temp file younger than this may belong to a daemon still writing it (two daemons may share a data dir).
STALE_TEMP_AGE_S = 60.0


def unsafe(path: Path | str, why: str) -> AppError:
    return AppError("unsafePath", f"refused {path}: {why}; nothing was written through it", path=str(path))


def _parts(rel: str | PurePosixPath) -> list[str]:
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or any(p in ("..", ".") for p in parts):
        raise ValueError(f"not a plain relative path: {rel}")
    return list(parts)


def _open_root(root: Path, create: bool) -> int:
    if create:
        root.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    return os.open(root, os.O_RDONLY | O_DIRECTORY)


@contextlib.contextmanager
def directory(root: Path, folders: list[str], *, create: bool = True) -> Iterator[int]:
    """An fd of ``root/folders…`` reached without following a symlink; missing folders are made 0700."""
    fd = _open_root(root, create)
    try:
        for depth, name in enumerate(folders):
            try:
                child = _open_child_dir(fd, name, create)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise unsafe(root.joinpath(*folders[: depth + 1]), "not a plain folder (a symlink?)") from exc
                raise
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _open_child_dir(fd: int, name: str, create: bool) -> int:
    try:
        return os.open(name, _NOFOLLOW_DIR, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, DIR_MODE, dir_fd=fd)
    child = os.open(name, _NOFOLLOW_DIR, dir_fd=fd)
    if stat.S_IMODE(os.fstat(child).st_mode) != DIR_MODE:
        os.chmod(child, DIR_MODE)
    return child


def _check_plain(fd: int, name: str, shown: Path) -> bool:
    """True when ``name`` exists as a regular file, False when absent; ``unsafePath`` for anything else."""
    try:
        st = os.lstat(name, dir_fd=fd)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(st.st_mode):
        raise unsafe(shown, "not a regular file (a symlink?)")
    return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@contextlib.contextmanager
def _space(shown: Path) -> Iterator[None]:
    """A write that finds the disk (or the quota) full is ``storageFull``, typed, not an internal error."""
    try:
        yield
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
            raise AppError("storageFull", f"the data dir's disk is full: {shown.name} was not written",
                           path=str(shown)) from exc
        raise


def write_file(root: Path, rel: str | PurePosixPath, data: bytes, mode: int = FILE_MODE) -> None:
    """Replace ``root/rel`` atomically (readers see the old file or the new one) with ``data`` at ``mode``."""
    *folders, name = _parts(rel)
    shown = root / rel
    with directory(root, folders) as dir_fd:
        _check_plain(dir_fd, name, shown)
        temp = f".{name}.{os.urandom(8).hex()}.tmp"  # what secrets.token_hex does, without its imports
        with _space(shown):
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW, mode, dir_fd=dir_fd)
            try:
                try:
                    os.chmod(fd, mode)
                    _write_all(fd, data)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=dir_fd)
                raise
            os.fsync(dir_fd)


def append(root: Path, rel: str | PurePosixPath, data: bytes, cap: int | None = None) -> bool:
    """Append ``data`` to ``root/rel`` (created 0600) and fsync it: one durable record of an append-only log.
    False, with nothing written, when it would take the file past ``cap`` bytes."""
    *folders, name = _parts(rel)
    shown = root / rel
    with directory(root, folders) as dir_fd:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | O_NOFOLLOW | O_NONBLOCK
        try:
            fd = os.open(name, flags, FILE_MODE, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
                raise unsafe(shown, "not a regular file (a symlink?)") from exc
            raise
        try:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode):
                raise unsafe(shown, "not a regular file")
            if cap is not None and status.st_size + len(data) > cap:
                return False
            with _space(shown):
                _write_all(fd, data)
                os.fsync(fd)
        finally:
            os.close(fd)
    return True


def read_file(root: Path, rel: str | PurePosixPath, limit: int | None = None) -> bytes | None:
    """The bytes of ``root/rel`` (at most ``limit + 1`` when a limit is given), None when it does not exist."""
    *folders, name = _parts(rel)
    shown = root / rel
    try:
        with directory(root, folders, create=False) as dir_fd:
            try:
                fd = os.open(name, os.O_RDONLY | O_NOFOLLOW | O_NONBLOCK, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise unsafe(shown, "a symlink") from exc
                raise
    except FileNotFoundError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise unsafe(shown, "not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read() if limit is None else handle.read(limit + 1)
    finally:
        os.close(fd)


def lock(root: Path, rel: str | PurePosixPath, timeout: float) -> FileLock:
    """A file lock at ``root/rel`` (0600, never a symlink); the caller enters it and handles ``Timeout``."""
    *folders, name = _parts(rel)
    with directory(root, folders) as dir_fd:
        _check_plain(dir_fd, name, root / rel)
    from filelock import FileLock  # imported on first lock: not needed to answer initialize

    return FileLock(str(root / rel), timeout=timeout, mode=FILE_MODE)


def seal(data_dir: Path) -> None:
    """At start: the data dir 0700, every folder in it 0700, every file 0600, stale temp files removed.

    Symlinks are left alone (never followed): a write that meets one fails with ``unsafePath``.
    """
    data_dir.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    if stat.S_IMODE(data_dir.stat().st_mode) != DIR_MODE:
        os.chmod(data_dir, DIR_MODE)
    _seal_folder(data_dir, time.time() - STALE_TEMP_AGE_S)


def _seal_folder(folder: Path, stale_before: float) -> None:
    with os.scandir(folder) as entries:
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    if stat.S_IMODE(st.st_mode) != DIR_MODE:
                        _chmod_plain(entry.path, _NOFOLLOW_DIR, DIR_MODE)
                    _seal_folder(Path(entry.path), stale_before)
                elif stat.S_ISREG(st.st_mode):
                    if _TEMP_NAME.fullmatch(entry.name) and st.st_mtime < stale_before:
                        os.unlink(entry.path)
                    elif stat.S_IMODE(st.st_mode) not in (FILE_MODE, OWNER_EXEC_MODE):
                        _chmod_plain(entry.path, os.O_RDONLY | O_NOFOLLOW | O_NONBLOCK, FILE_MODE)
            except OSError:
                continue  # another writer raced us; what it writes is already sealed


def _chmod_plain(path: str, flags: int, mode: int) -> None:
    """chmod through an ``O_NOFOLLOW`` fd, so a symlink swapped in meanwhile is never followed."""
    fd = os.open(path, flags)
    try:
        os.chmod(fd, mode)
    finally:
        os.close(fd)
