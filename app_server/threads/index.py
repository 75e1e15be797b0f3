"""The thread index, ``<dataDir>/threads/index.jsonl``: ``thread/list`` without reading every thread file.

One summary line (the wire ``Thread``) is appended and fsynced whenever a thread starts or changes status; the
last line of an id wins. It is loaded once, in a worker thread, and then kept in memory, sorted by
``(createdAt, id)``, so a page costs a bisection plus the page. The thread files stay the truth: at load, a
thread file missing from the index is summarized from its file, an index line whose file is gone is
dropped, and an index that is missing or corrupt is rebuilt from the files. A load that had to repair or that
found many superseded lines rewrites the index atomically.
"""

from __future__ import annotations

import bisect
import json
import os
import re
from pathlib import Path

import anyio

from app_server.process.logs import get_logger
from mcp_runtime import safe_fs
from protocol.jsonrpc import AppError
from protocol.thread import Thread

log = get_logger("app_server.thread_index")

INDEX_FILE = "threads/index.jsonl"
THREAD_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_THREAD_FILE = re.compile(r"([A-Za-z0-9_-]{1,64})\.json")
_DEFAULT_LIMIT = 100

Key = tuple[str, str]


def _line(thread: Thread) -> bytes:
    return thread.model_dump_json(by_alias=True).encode() + b"\n"


def _invalid_cursor() -> AppError:
    return AppError("invalidParams", "invalid cursor", errors=[{"path": "cursor", "message": "invalid cursor"}])


def summarize(data: bytes) -> Thread:
    """The summary of a thread file (``threads/<id>.json``), without validating its server configs."""
    raw = json.loads(data)
    if not isinstance(raw, dict) or not isinstance(raw.get("mcpServers"), dict):
        raise ValueError("not a thread record")
    cwd = raw.get("cwd")
    return Thread(
        id=str(raw["id"]),
        name=str(raw.get("name") or ""),
        cwd=cwd if isinstance(cwd, str) else None,
        created_at=str(raw["createdAt"]),
        status=raw["status"],
        servers=sorted(raw["mcpServers"]),
    )


class ThreadIndex:
    """Thread summaries in memory, newest first by ``(createdAt, id)``; durable as an append-only log."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._threads: dict[str, Thread] | None = None
        self._keys: list[Key] = []
        self._early: dict[str, Thread] = {}
        self._loading = anyio.Lock()

    # ------------------------------------------------------------------ writes

    def put(self, thread: Thread) -> None:
        """Record a started thread or a changed status (durable before it returns)."""
        safe_fs.append(self.data_dir, INDEX_FILE, _line(thread))
        if self._threads is None:
            self._early[thread.id] = thread
        else:
            self._insert(thread)

    def refresh(self, thread: Thread) -> None:
        """A thread file was read: repair the index if it disagrees (a crash between the two writes)."""
        if self._threads is not None and self._threads.get(thread.id) not in (None, thread):
            self.put(thread)

    def _insert(self, thread: Thread) -> None:
        assert self._threads is not None
        if thread.id not in self._threads:
            bisect.insort(self._keys, (thread.created_at, thread.id))
        self._threads[thread.id] = thread

    # ------------------------------------------------------------------- reads

    async def page(self, cursor: str | None, limit: int | None) -> tuple[list[Thread], str | None]:
        """One page, newest first; the cursor is the ``(createdAt, id)`` of the last thread returned."""
        end_key = self._decode(cursor) if cursor is not None else None
        await self._ensure_loaded()
        assert self._threads is not None
        end = len(self._keys) if end_key is None else bisect.bisect_left(self._keys, end_key)
        start = max(0, end - (limit or _DEFAULT_LIMIT))
        keys = self._keys[start:end][::-1]
        next_cursor = f"{keys[-1][0]}|{keys[-1][1]}" if start > 0 and keys else None
        return [self._threads[thread_id] for _, thread_id in keys], next_cursor

    @staticmethod
    def _decode(cursor: str) -> Key:
        created_at, _, thread_id = cursor.rpartition("|")
        if not created_at or not THREAD_ID.fullmatch(thread_id):
            raise _invalid_cursor()
        return created_at, thread_id

    async def _ensure_loaded(self) -> None:
        async with self._loading:
            if self._threads is not None:
                return
            threads = await anyio.to_thread.run_sync(self._load)
            self._threads = threads
            self._keys = sorted((t.created_at, t.id) for t in threads.values())
            early, self._early = self._early, {}
            for thread in early.values():  # written while loading: a rewrite may have missed the line
                self.put(thread)

    # ------------------------------------------------------------- load/repair

    def _thread_ids(self) -> set[str]:
        try:
            with safe_fs.directory(self.data_dir, ["threads"], create=False) as folder, os.scandir(folder) as entries:
                return {
                    match.group(1)
                    for entry in entries
                    if (match := _THREAD_FILE.fullmatch(entry.name)) and entry.is_file(follow_symlinks=False)
                }
        except FileNotFoundError:
            return set()

    def _read_log(self) -> tuple[dict[str, Thread], int, bool]:
        """(threads, lines read, intact); a torn last line is not intact (the next append would glue to it)."""
        data = safe_fs.read_file(self.data_dir, INDEX_FILE)
        if data is None:
            return {}, 0, False
        complete, _, torn = data.rpartition(b"\n")
        threads: dict[str, Thread] = {}
        lines = 0
        for line in complete.splitlines():
            try:
                thread = Thread.model_validate_json(line)
            except ValueError:
                log.warning("thread index is corrupt; rebuilding it from the thread files")
                return {}, 0, False
            threads[thread.id] = thread
            lines += 1
        return threads, lines, not torn

    def _load(self) -> dict[str, Thread]:
        on_disk = self._thread_ids()
        threads, lines, intact = self._read_log()
        stale = threads.keys() - on_disk
        for thread_id in stale:
            del threads[thread_id]
        missing = on_disk - threads.keys()
        for thread_id in missing:
            thread = self._summarize_file(thread_id)
            if thread is not None:
                threads[thread_id] = thread
        if (threads or lines) and (not intact or stale or missing or lines > 2 * len(threads) + 64):
            ordered = sorted(threads.values(), key=lambda t: (t.created_at, t.id))
            safe_fs.write_file(self.data_dir, INDEX_FILE, b"".join(_line(t) for t in ordered))
        return threads

    def _summarize_file(self, thread_id: str) -> Thread | None:
        try:
            data = safe_fs.read_file(self.data_dir, f"threads/{thread_id}.json")
            return summarize(data) if data is not None else None
        except (ValueError, KeyError, TypeError, AppError) as exc:
            log.warning("unreadable thread record", thread_id=thread_id, error=type(exc).__name__)
            return None
