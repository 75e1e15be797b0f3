"""The per-thread context archive, where large projections and every result blob live (SPEC §4, §5): the tool
call writes it and ``thread/context/read`` pages it back, through the same object.

``<dataDir>/threads/<threadId>.archive/<ref>`` holds one entry per file (a one-line JSON header, then the
stored bytes), written whole or not at all and opened only relative to folder descriptors with
``O_NOFOLLOW``, so a planted symlink is ``unsafePath`` and nothing goes through it. Whatever else is planted
there (a folder, a FIFO) is ``unsafePath`` too, is opened without blocking, and is neither counted nor removed:
the caps count and evict only the archive's own regular files, so they hold however the folder was tampered
with. The methods are blocking file I/O: callers run them off the event loop (``anyio.to_thread``).
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import structlog

from mcp_runtime.storage.safe_fs import O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK
from protocol.encoding import compact
from protocol.jsonrpc import AppError
from protocol.thread import ContextReadResult

log = structlog.get_logger("mcp_runtime.archive")

ARCHIVE_CAP_BYTES = 256 * 1024 * 1024
DATA_DIR_CAP_BYTES = 1024 * 1024 * 1024
STORAGE_FULL = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG})
"""A write the disk has no room for: the result is answered without its archive entries (SPEC §5)."""
_REF = re.compile(r"ctx_[0-9]{20}_[0-9a-f]{8}")
_THREAD_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ARCHIVE_FOLDER = re.compile(r"([A-Za-z0-9_-]{1,64})\.archive")
_TEMP_PREFIX = ".tmp-"
_DIR_FLAGS = os.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK
_HEADER_MAX = 4096

Kind = Literal["text", "image", "audio", "resource"]


@dataclass(frozen=True)
class Stored:
    """An archived entry as the projection names it."""

    ref: str
    kind: Kind
    mime_type: str | None
    bytes: int
    sha256: str

    def view(self) -> dict[str, Any]:
        """The ``ProjectionRef`` JSON object (``mimeType`` left out when unknown, as the model writes it)."""
        view: dict[str, Any] = {"ref": self.ref, "kind": self.kind}
        if self.mime_type is not None:
            view["mimeType"] = self.mime_type
        return {**view, "bytes": self.bytes, "sha256": self.sha256}


def stored(ref: str, kind: Kind, mime_type: str | None, data: bytes) -> Stored:
    return Stored(ref, kind, mime_type, len(data), hashlib.sha256(data).hexdigest())


@dataclass(frozen=True)
class Chunk:
    """One byte range of an entry, plus what the entry is."""

    kind: Kind
    mime_type: str | None
    total: int
    data: bytes


def _unsafe(path: Path) -> AppError:
    return AppError("unsafePath", "a path in the data dir is a symlink or not a regular entry", path=str(path))


def _continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def whole_characters(data: bytes, limit: int) -> bytes:
    """The longest prefix of ``data`` of at most ``limit`` bytes that ends on a UTF-8 character boundary
    (``data`` holds up to 3 bytes more than ``limit``); one whole character when ``limit`` is shorter than it."""
    if len(data) <= limit:
        return data
    end = limit
    while end > 0 and _continuation(data[end]):
        end -= 1
    if end == 0:
        end = 1
        while end < len(data) and _continuation(data[end]):
            end += 1
    return data[:end]


def _own_entries(folder: int) -> list[tuple[str, int]]:
    """The archive's own entries in a folder, oldest first, with their sizes: regular files with a ref's name."""
    found = []
    for entry in os.scandir(folder):
        if not _REF.fullmatch(entry.name):
            continue
        try:
            found_stat = entry.stat(follow_symlinks=False)
        except OSError:  # removed meanwhile
            continue
        if stat.S_ISREG(found_stat.st_mode):
            found.append((entry.name, found_stat.st_size))
    return sorted(found)


def _remove(folder: int, name: str) -> bool:
    """Unlink one of the archive's entries; False when it is gone or not a file (swapped for a folder)."""
    try:
        os.unlink(name, dir_fd=folder)
    except OSError:
        return False
    return True


class ThreadArchive:
    """Every thread's archive under one ``threads`` folder; safe to use from several worker threads.

    Each thread's archive is capped: after a write its oldest entries are dropped until it fits (refs sort by
    creation time, so "oldest" is a name order). All archives together are capped too: past that, the archives
    written to longest ago are removed whole, an archived thread's like any other.

    Large because every path into the folders goes through it: the safe opening, the two caps, the writes with
    their flush, and the reads must share one lock per thread and one view of what each archive holds.
    """

    def __init__(
        self, directory: Path, cap_bytes: int = ARCHIVE_CAP_BYTES, data_dir_cap_bytes: int = DATA_DIR_CAP_BYTES
    ) -> None:
        self.directory = directory
        self.cap_bytes = cap_bytes
        self.data_dir_cap_bytes = data_dir_cap_bytes
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._last_ns = 0
        self._swept: set[str] = set()
        self._usage: dict[str, tuple[str, int]] | None = None
        """Per thread: its newest ref and its bytes on disk; read from disk at the first write, then kept."""
        self._usage_guard = threading.Lock()
        self._unsynced: dict[str, set[str]] = {}
        """Per thread: entries written by ``put(sync=False)`` whose bytes :meth:`sync` has not yet forced to disk."""

    # ------------------------------------------------------------------ refs

    def new_ref(self) -> str:
        """A fresh ref; later refs sort after earlier ones (the eviction order)."""
        with self._guard:
            self._last_ns = max(self._last_ns + 1, time.time_ns())
            return f"ctx_{self._last_ns:020d}_{secrets.token_hex(4)}"

    def _lock(self, thread_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(thread_id, threading.Lock())

    # --------------------------------------------------------------- folders

    def _open_dir(self, name: str | Path, parent: int | None = None) -> int | None:
        """A folder descriptor, never through a symlink; None when the folder does not exist."""
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _unsafe(self.directory / name) from exc

    @contextmanager
    def _folder(self, thread_id: str, *, create: bool) -> Iterator[int | None]:
        """A descriptor of the thread's archive folder (None when it does not exist and ``create`` is off)."""
        if not _THREAD_ID.fullmatch(thread_id):
            raise AppError("unknownThread", "no thread with this id", threadId=thread_id[:64])
        name = f"{thread_id}.archive"
        if create:
            try:
                self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            except FileExistsError as exc:
                raise _unsafe(self.directory) from exc
        parent = self._open_dir(self.directory)
        folder = None
        try:
            if parent is not None and create:
                try:
                    os.mkdir(name, 0o700, dir_fd=parent)
                except FileExistsError:
                    pass
            folder = self._open_dir(name, parent) if parent is not None else None
            if folder is not None and thread_id not in self._swept:
                self._sweep_temps(folder)
                self._swept.add(thread_id)
            yield folder
        finally:
            for fd in (folder, parent):
                if fd is not None:
                    os.close(fd)

    @staticmethod
    def _sweep_temps(folder: int) -> None:
        """Temp files a killed daemon left behind are removed the first time the archive is opened."""
        for entry in os.scandir(folder):
            if entry.name.startswith(_TEMP_PREFIX) and entry.is_file(follow_symlinks=False):
                _remove(folder, entry.name)

    # ----------------------------------------------------------------- write

    def put_unless_full(self, thread_id: str, entries: Sequence[tuple[Stored, bytes]], *, sync: bool = True) -> bool:
        """:meth:`put`, or False when the disk is full. Decided here, in the worker thread, so no exception carries
        a traceback (and with it the result's bytes) back to the loop, where it would outlive the call."""
        try:
            self.put(thread_id, entries, sync=sync)
        except OSError as exc:
            if exc.errno not in STORAGE_FULL:
                raise
            return False
        return True

    def put(self, thread_id: str, entries: Sequence[tuple[Stored, bytes]], *, sync: bool = True) -> None:
        """Store ``entries`` durably, then drop the thread's oldest other entries until its cap holds, then other
        threads' archives until the data dir's cap holds.

        ``sync=False``: each entry is still whole or absent for any reader and for a killed daemon (written, then
        renamed), but forced to disk only by the next :meth:`sync` of the thread: a call does not wait, holding its
        result, for flushes that under load take as long as every other write pending on the disk."""
        if not entries:
            return
        incoming = sum(len(data) + _HEADER_MAX for _, data in entries)
        if incoming > self.cap_bytes:
            raise AppError(
                "responseTooLarge", f"the result's archive entries exceed the per-thread cap of {self.cap_bytes}"
            )
        with self._lock(thread_id):
            with self._folder(thread_id, create=True) as folder:
                assert folder is not None
                written: list[str] = []
                try:
                    for meta, data in entries:
                        self._write(folder, meta, data, sync)
                        written.append(meta.ref)
                    if sync:
                        os.fsync(folder)
                except OSError:  # a full disk: no half of a result stays behind, taking space
                    for ref in written:
                        with contextlib.suppress(OSError):
                            os.unlink(ref, dir_fd=folder)
                    raise
                if not sync:
                    self._unsynced.setdefault(thread_id, set()).update(written)
                kept = self._enforce_cap(folder, {meta.ref for meta, _ in entries}, sync)
            self._enforce_data_dir_cap(thread_id, kept)

    def sync(self, thread_id: str) -> None:
        """Force the thread's entries written with ``sync=False`` to disk, and its folder: one flush for every entry
        written since the last. An entry evicted meanwhile is passed over; a failure is logged, and the entries wait
        for the next sync."""
        with self._lock(thread_id):
            pending = self._unsynced.pop(thread_id, set())
            if not pending:
                return
            try:
                with self._folder(thread_id, create=False) as folder:
                    if folder is None:
                        return
                    for ref in pending:
                        try:
                            fd = os.open(ref, os.O_RDONLY | O_NOFOLLOW | O_NONBLOCK, dir_fd=folder)
                        except FileNotFoundError:
                            continue
                        try:
                            os.fsync(fd)
                        finally:
                            os.close(fd)
                    os.fsync(folder)
            except OSError as exc:
                self._unsynced.setdefault(thread_id, set()).update(pending)
                log.warning("archive_sync_failed", thread_id=thread_id, cause=exc.strerror or str(exc))

    def drop(self, thread_id: str, refs: Sequence[str]) -> None:
        """Remove these entries of a thread's archive (a background task's result past its TTL); refs already gone
        are passed over."""
        with self._lock(thread_id):
            with self._folder(thread_id, create=False) as folder:
                if folder is None:
                    return
                for ref in refs:
                    if _REF.fullmatch(ref):
                        _remove(folder, ref)
                left = _own_entries(folder)
            self._enforce_data_dir_cap(thread_id, left)

    @staticmethod
    def _write(folder: int, meta: Stored, data: bytes, sync: bool) -> None:
        header = {"kind": meta.kind, "mimeType": meta.mime_type, "bytes": meta.bytes, "sha256": meta.sha256}
        temp = f"{_TEMP_PREFIX}{meta.ref}"
        # The one place an archive file is created: never through a symlink, never readable by others.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW, 0o600, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(compact(header) + b"\n")
                handle.write(data)
                handle.flush()
                if sync:
                    os.fsync(handle.fileno())
            os.rename(temp, meta.ref, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            try:
                os.unlink(temp, dir_fd=folder)
            except FileNotFoundError:
                pass
            raise

    def _enforce_cap(self, folder: int, keep: set[str], sync: bool) -> list[tuple[str, int]]:
        """Drop the oldest entries (not ``keep``) until the thread's cap holds; the entries left (the removals are
        forced to disk at once with ``sync``, else by the next :meth:`sync`)."""
        entries = _own_entries(folder)
        total = sum(size for _, size in entries)
        left = []
        dropped = False
        for name, size in entries:
            if total > self.cap_bytes and name not in keep and _remove(folder, name):
                total -= size
                dropped = True
            else:
                left.append((name, size))
        if dropped and sync:
            os.fsync(folder)
        return left

    # -------------------------------------------------------- data dir's cap

    def _scan_usage(self) -> dict[str, tuple[str, int]]:
        """Every thread archive's newest ref and bytes, from disk (planted folders and files left out)."""
        usage: dict[str, tuple[str, int]] = {}
        parent = self._open_dir(self.directory)
        if parent is None:
            return usage
        try:
            for entry in os.scandir(parent):
                match = _ARCHIVE_FOLDER.fullmatch(entry.name)
                if match is None or not entry.is_dir(follow_symlinks=False):
                    continue
                try:
                    folder = self._open_dir(entry.name, parent)
                except AppError:
                    continue
                if folder is None:
                    continue
                try:
                    entries = _own_entries(folder)
                finally:
                    os.close(folder)
                if entries:
                    usage[match.group(1)] = (entries[-1][0], sum(size for _, size in entries))
        finally:
            os.close(parent)
        return usage

    def _enforce_data_dir_cap(self, thread_id: str, entries: list[tuple[str, int]]) -> None:
        """Record the thread's archive, then remove the archives written to longest ago (never this one) until
        all of them fit the data dir's cap. An archive being written by another worker is passed over."""
        with self._usage_guard:
            if self._usage is None:
                self._usage = self._scan_usage()
            usage = self._usage
            if entries:
                usage[thread_id] = (entries[-1][0], sum(size for _, size in entries))
            else:
                usage.pop(thread_id, None)
            total = sum(size for _, size in usage.values())
            if total <= self.data_dir_cap_bytes:
                return
            for _, victim in sorted((newest, other) for other, (newest, _) in usage.items() if other != thread_id):
                lock = self._lock(victim)
                if not lock.acquire(blocking=False):
                    continue
                before = usage[victim][1]
                try:
                    total -= before - self._evict_all(victim)
                finally:
                    lock.release()
                if total <= self.data_dir_cap_bytes:
                    return

    def _evict_all(self, thread_id: str) -> int:
        """Remove every entry of a thread's archive; the bytes that could not be removed (and stay counted)."""
        usage = self._usage
        assert usage is not None
        left = 0
        try:
            with self._folder(thread_id, create=False) as folder:
                if folder is not None:
                    for name, size in _own_entries(folder):
                        if not _remove(folder, name):
                            left += size
                    os.fsync(folder)
        except AppError:  # the folder was swapped for something planted: nothing of ours is reachable there
            left = 0
        if left:
            usage[thread_id] = (usage[thread_id][0], left)
        else:
            usage.pop(thread_id, None)
        return left

    # ------------------------------------------------------------------ read

    def page(self, thread_id: str, ref: str, offset: int, limit: int) -> ContextReadResult:
        """``thread/context/read``: a text entry's range as text, a blob's as base64; ``nextOffset`` null at the end."""
        chunk = self.read(thread_id, ref, offset, limit)
        end = min(offset, chunk.total) + len(chunk.data)
        data = chunk.data.decode() if chunk.kind == "text" else base64.b64encode(chunk.data).decode()
        return ContextReadResult(
            ref=ref,
            offset=offset,
            data=data,
            next_offset=end if end < chunk.total else None,
            bytes=chunk.total,
            mime_type=chunk.mime_type,
        )

    def read(self, thread_id: str, ref: str, offset: int, limit: int) -> Chunk:
        """Bytes ``[offset, offset + limit)`` of an entry (``unknownRef`` when absent or dropped); for a ``text``
        entry the range ends on a character boundary and must start on one (else ``invalidParams``)."""
        missing = AppError("unknownRef", "no archived context with this ref in this thread", ref=ref[:128])
        if not _REF.fullmatch(ref):
            raise missing
        with self._folder(thread_id, create=False) as folder:
            if folder is None:
                raise missing
            try:
                fd = os.open(ref, os.O_RDONLY | O_NOFOLLOW | O_NONBLOCK, dir_fd=folder)
            except FileNotFoundError as exc:
                raise missing from exc
            except OSError as exc:  # a symlink (ELOOP), a socket, a file the daemon may not read
                raise _unsafe(self.directory / ref) from exc
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a planted folder or FIFO: never read, never waited on
            os.close(fd)
            raise _unsafe(self.directory / ref)
        with os.fdopen(fd, "rb") as handle:
            header_line = handle.readline(_HEADER_MAX)
            try:
                header = json.loads(header_line)
                kind, total = header["kind"], int(header["bytes"])
            except (ValueError, KeyError, TypeError) as exc:
                raise missing from exc
            start = min(offset, total)
            handle.seek(len(header_line) + start)
            text = kind == "text"
            data = handle.read(max(0, min(limit + (3 if text else 0), total - start)))
        if text:
            if data and _continuation(data[0]):
                message = "offset is inside a UTF-8 character of this text"
                raise AppError("invalidParams", message, errors=[{"path": "offset", "message": message}])
            data = whole_characters(data, limit)
        return Chunk(kind=kind, mime_type=header.get("mimeType"), total=total, data=data)
