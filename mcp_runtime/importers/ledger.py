"""``<dataDir>/sync-ledger.json``: which entries this daemon wrote into which app file, and what it wrote.

Sync removes or rewrites only entries recorded here, and only while the entry still holds exactly what
was written (a fingerprint of its parsed value): an entry the user added, or edited after we wrote it,
is theirs and is never touched.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from mcp_runtime.importers.files import LOCK_TIMEOUT_S, MAX_APP_CONFIG_BYTES
from mcp_runtime.storage import safe_fs as _safe_fs
from protocol.jsonrpc import AppError

LEDGER_FILE = "sync-ledger.json"
LEDGER_VERSION = 1


def fingerprint(value: Any) -> str:
    """A stable digest of an entry's parsed value (formatting and key order do not matter)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def ledger_key(app: str, path: Path) -> str:
    return f"{app}:{path}"


def _lock(data_dir: Path) -> FileLock:
    return _safe_fs.lock(data_dir, f"{LEDGER_FILE}.lock", LOCK_TIMEOUT_S)


def _load(data_dir: Path) -> dict[str, dict[str, str]]:
    try:
        data = _safe_fs.read_file(data_dir, LEDGER_FILE, MAX_APP_CONFIG_BYTES)
        if data is None:
            return {}
        if len(data) > MAX_APP_CONFIG_BYTES:
            raise ValueError("the ledger is too large")
        raw = json.loads(data)
        entries = raw["entries"]
        if raw.get("version") != LEDGER_VERSION or not isinstance(entries, dict):
            raise ValueError("unexpected ledger shape")
        return {str(key): {str(name): str(digest) for name, digest in owned.items()} for key, owned in entries.items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise AppError(
            "storeCorrupted", f"{LEDGER_FILE} in the data dir cannot be read; fix or remove it to sync again"
        ) from exc


def owned_entries(data_dir: Path, key: str, *, lock: bool = True) -> dict[str, str]:
    """Entry name -> fingerprint of what this daemon last wrote into that app file."""
    try:
        with _lock(data_dir) if lock else contextlib.nullcontext():
            return dict(_load(data_dir).get(key, {}))
    except Timeout as exc:
        raise AppError("serverBusy", "the sync ledger is locked by another writer") from exc


def record(data_dir: Path, key: str, owned: dict[str, str]) -> None:
    """Replace this app file's record (read-modify-write under the ledger lock, written atomically)."""
    try:
        with _lock(data_dir):
            entries = _load(data_dir)
            if owned:
                entries[key] = dict(sorted(owned.items()))
            else:
                entries.pop(key, None)
            body = json.dumps({"version": LEDGER_VERSION, "entries": entries}, indent=2, sort_keys=True) + "\n"
            _safe_fs.write_file(data_dir, LEDGER_FILE, body.encode())
    except Timeout as exc:
        raise AppError("serverBusy", "the sync ledger is locked by another writer") from exc
