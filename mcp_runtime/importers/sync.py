"""``mcpServer/syncAllToLive`` for one app: write our servers into its live config, touching only ours.

Ownership comes from the ledger: an entry is rewritten or removed only if this daemon wrote it and it
still holds what was written. Everything else in the file — other keys, comments, formatting and the
user's own entries — is kept. The write is locked, atomic, mode-preserving and backed up first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import structlog

from mcp_runtime.config.edits import to_wire
from mcp_runtime.config.rules import parse_server_config
from mcp_runtime.importers import ledger
from mcp_runtime.importers.common import AppSpec, NotExpressible
from mcp_runtime.importers.documents import open_document, verify
from mcp_runtime.importers.files import UnparsableFile, atomic_write, backup, file_mode, locked, read_text, real_path
from mcp_runtime.importers.registry import APPS, resolve_path
from mcp_runtime.secrets.configs import reveal
from mcp_runtime.secrets.store import secret_store
from protocol.config import AppName, McpServerConfig
from protocol.jsonrpc import AppError
from protocol.server import ErrorInfo, SyncAppResult

_log = structlog.get_logger(__name__)


def meaning(spec: AppSpec, name: str, value: Any) -> str:
    """A fingerprint of what an entry means to the app, not how it is spelled.

    ``"env": {}`` and no ``env`` mean the same; a timeout the entry leaves out is the app's default, so
    it differs from any written one. An entry we cannot read as a server is compared as parsed text.
    """
    if not isinstance(value, dict):
        return ledger.fingerprint(value)
    try:
        wire = to_wire(parse_server_config(name, spec.read_entry(value, [])))
    except AppError:
        return ledger.fingerprint(value)
    significant = {
        key: item for key, item in wire.items() if item not in ([], {}) and not (key == "enabled" and item is True)
    }
    return ledger.fingerprint(significant)


def _desired(spec: AppSpec, servers: Mapping[str, McpServerConfig], warnings: list[str]) -> dict[str, Any]:
    desired: dict[str, Any] = {}
    for name in sorted(servers):
        config = servers[name]
        if not config.enabled:
            continue
        notes: list[str] = []
        try:
            desired[name] = spec.write_entry(config, notes)
        except NotExpressible as exc:
            warnings.append(f"{name}: not synced to {spec.label}: {exc}")
            continue
        warnings.extend(f"{name}: {note}" for note in notes)
    return desired


def sync_app(
    app: AppName,
    *,
    path: Path | None,
    home: Path,
    env: Mapping[str, str],
    servers: Mapping[str, McpServerConfig],
    data_dir: Path,
    dry_run: bool,
    warnings: list[str] | None = None,
) -> SyncAppResult:
    """Sync one app. File problems come back as ``result.error`` (the file untouched), not as exceptions.

    ``warnings`` (optional) collects why servers were not written; they are also logged.
    """
    spec = APPS[app]
    notes: list[str] = []
    servers = {name: reveal(secret_store(), name, config) for name, config in servers.items()}  # the app needs values
    target = resolve_path(spec, path, home, env)
    result = SyncAppResult(app=app, path=str(target), servers=[], changed=False)
    desired = _desired(spec, servers, notes)
    try:
        real = real_path(target)
        # A dry run only reads (files are replaced atomically), so it creates no lock file either.
        with contextlib.nullcontext() if dry_run else locked(data_dir, real):
            _sync_locked(spec, real, desired, data_dir, dry_run, result, notes)
    except UnparsableFile as exc:
        result.error = ErrorInfo(reason="parseError", message=f"{target}: {exc}; the file was left untouched")
    except AppError as exc:
        result.error = ErrorInfo(reason=exc.reason, message=exc.message)
    except OSError as exc:
        result.error = ErrorInfo(reason="internal", message=f"cannot write {target}: {exc.strerror}")
    for note in notes:
        _log.warning("sync_skipped", app=app, note=note)
    if warnings is not None:
        warnings.extend(notes)
    return result


def _unchanged(spec: AppSpec, name: str, value: Any, recorded: str) -> bool:
    """The entry still means what we wrote (ledgers from before meaning-fingerprints recorded the text)."""
    return recorded in (meaning(spec, name, value), ledger.fingerprint(value))


def _sync_locked(
    spec: AppSpec,
    real: Path,
    desired: dict[str, Any],
    data_dir: Path,
    dry_run: bool,
    result: SyncAppResult,
    notes: list[str],
) -> None:
    text = read_text(real)
    doc = open_document(spec.fmt, text, spec.section)
    current = doc.entries()
    key = ledger.ledger_key(spec.app, real)
    owned = ledger.owned_entries(data_dir, key, lock=not dry_run)
    now_owned: dict[str, str] = {}
    written: list[str] = []
    expected = dict(current)
    edited = False
    for name, value in desired.items():
        digest = meaning(spec, name, value)
        if name in current:
            present = meaning(spec, name, current[name])
            if name not in owned:
                if present == digest:
                    written.append(name)  # the user's entry means the same: in sync, still theirs
                else:
                    notes.append(f"{name}: not synced to {spec.label}: an entry the user added has this name")
                continue
            if not _unchanged(spec, name, current[name], owned[name]):
                notes.append(f"{name}: not synced to {spec.label}: the entry was edited outside this daemon")
                continue
            if present != digest:
                doc.set(name, value)
                edited = True
        else:
            doc.set(name, value)
            edited = True
        expected[name] = value
        now_owned[name] = digest
        written.append(name)
    for name, digest in owned.items():
        if name in desired or name not in current:
            continue
        if not _unchanged(spec, name, current[name], digest):
            notes.append(f"{name}: left in {spec.label}: the entry was edited outside this daemon")
            continue
        doc.remove(name)
        expected.pop(name)
        edited = True
    new_text = doc.render() if edited else text
    result.servers = sorted(written)
    result.changed = edited and new_text != text
    if result.changed:
        assert new_text is not None
        try:
            verify(spec.fmt, text, new_text, spec.section, expected)
        except RuntimeError as exc:
            raise AppError("internal", f"refused to write {real}: {exc}") from exc
    if dry_run:
        return
    if result.changed:
        assert new_text is not None
        if read_text(real) != text:
            raise AppError("revisionMismatch", f"{real} changed while syncing; run the sync again")
        if text is not None:
            result.backup_path = str(backup(data_dir, spec.app, real, text.encode()))
        atomic_write(real, new_text.encode(), mode=file_mode(real))
    if now_owned != owned:
        ledger.record(data_dir, key, now_owned)
