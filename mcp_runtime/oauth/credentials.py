"""The OAuth credential envelope, ``<dataDir>/credentials.json`` (0600, replaced atomically under a file lock).

Entries are keyed by server name *and* exact URL, so a config pointing elsewhere never gets the old token; a
file that does not parse is never overwritten, since the tokens in it may still be recoverable. Free of the
MCP SDK, so status rows can read it cheaply. With the OS keychain (SPEC §14) an entry's secrets (tokens,
registration, DPoP key) are one keychain item, written before the file names it (``secrets``, ``holds``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from mcp_runtime.secrets.store import secret_store
from mcp_runtime.storage.clock import utc_now
from mcp_runtime.storage.safe_fs import FILE_MODE
from mcp_runtime.storage.store import write_atomic
from protocol.jsonrpc import AppError

CREDENTIALS_VERSION = 1
CREDENTIALS_FILE = "credentials.json"
_LOCK_TIMEOUT_S = 5.0
_MAX_FILE_BYTES = 1024 * 1024

Entry = dict[str, Any]
"""One server's record: ``tokens`` (RFC 6749 token response), ``clientInfo`` (RFC 7591 registration),
``expiresAt`` (epoch seconds of the access token's expiry, or None), ``metadata`` (discovered OAuth metadata,
no secrets), ``requestedScopes`` (what the login asked for), ``challengedScopes`` (the last ``insufficient_scope``
challenge, for step-up), ``dpopKey`` (the PEM private key of the server's DPoP proofs) and ``tokenType: DPoP``
(while the tokens are bound to it), ``updatedAt``. A pre-registered client's secret is never stored (it stays in
the environment)."""
BINDING_FIELDS = ("dpopKey", "tokenType")
LOGIN_LOST = "loginLost"
"""Marks an entry whose tokens were dropped because its login stopped working; a new login's tokens clear it."""
"""What is written together with the tokens, since the tokens are bound to it."""
SECRET_FIELDS = ("tokens", "clientInfo", "dpopKey")
"""What the secret store keeps for an entry, as one item (so tokens and the key they are bound to change together)."""
_REFERENCE, _HOLDS = "secrets", "holds"


def _field(url: str) -> str:
    """The entry's name in the secret store: it is about one server's login at one URL."""
    return f"oauth {url}"


def _revealed(name: str, url: str, entry: Entry) -> Entry:
    """The entry with its secrets, wherever they are kept (``secretStoreLocked``; an item gone means no login)."""
    recorded = entry.get(_REFERENCE)
    if not isinstance(recorded, str):
        return entry
    plain = {k: v for k, v in entry.items() if k not in (_REFERENCE, _HOLDS)}
    try:
        secrets = json.loads(secret_store().reveal(name, _field(url), recorded))
    except AppError as exc:
        if exc.reason != "missingSecret":
            raise
        return plain  # removed behind the daemon's back: the server needs a login again
    return {**plain, **secrets} if isinstance(secrets, dict) else plain


def _sealed(name: str, url: str, entry: Entry) -> Entry:
    """The entry as the file records it: its secrets kept first (a fresh item with the keychain)."""
    secrets = {k: entry[k] for k in SECRET_FIELDS if k in entry}
    plain = {k: v for k, v in entry.items() if k not in (*SECRET_FIELDS, _REFERENCE, _HOLDS)}
    if not secrets:
        return plain
    value = json.dumps(secrets, sort_keys=True)
    recorded = secret_store().keep(name, _field(url), value)
    if recorded == value:
        return {**plain, **secrets}
    return {**plain, _REFERENCE: recorded, _HOLDS: sorted(secrets)}


def _forget(name: str, url: str, entry: Entry | None) -> None:
    recorded = (entry or {}).get(_REFERENCE)
    if isinstance(recorded, str):
        try:
            secret_store().forget(name, _field(url), recorded)
        except AppError:
            return  # left behind: an item nothing names, never a value in use


def entry_key(name: str, url: str) -> str:
    """Server names never contain a space, so the key splits back unambiguously."""
    return f"{name} {url}"


class CredentialStore:
    """Synchronous and short (one small file); async callers run it in a worker thread."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / CREDENTIALS_FILE
        self._lock = FileLock(str(data_dir / f".{CREDENTIALS_FILE}.lock"), timeout=_LOCK_TIMEOUT_S, mode=FILE_MODE)

    def _read(self) -> dict[str, Entry]:
        """The entries; raises ValueError when the file exists but is not a valid envelope."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        if len(raw) > _MAX_FILE_BYTES:
            raise ValueError(f"{self.path.name} is larger than {_MAX_FILE_BYTES} bytes")
        document = json.loads(raw)
        if not isinstance(document, dict) or document.get("version") != CREDENTIALS_VERSION:
            raise ValueError(f"{self.path.name} has an unknown version")
        entries = document.get("entries")
        if not isinstance(entries, dict) or not all(isinstance(v, dict) for v in entries.values()):
            raise ValueError(f"{self.path.name} entries are not objects")
        return entries

    def _recorded(self, name: str, url: str) -> Entry | None:
        """The entry as the file records it (secrets possibly by reference)."""
        try:
            return self._read().get(entry_key(name, url))
        except (OSError, ValueError):
            return None

    def get(self, name: str, url: str) -> Entry | None:
        """The entry for exactly (name, url) with its secrets; None when absent or when the file is unreadable.
        Blocks on the keychain (``secretStoreLocked``)."""
        entry = self._recorded(name, url)
        return _revealed(name, url, entry) if entry is not None else None

    def has_tokens(self, name: str, url: str) -> bool:
        """From the file alone: status rows never wait on the keychain."""
        entry = self._recorded(name, url)
        if entry is not None and "tokens" in (entry.get(_HOLDS) or []):
            return True
        return bool(entry and isinstance(entry.get("tokens"), dict) and entry["tokens"].get("access_token"))

    def login_lost(self, name: str, url: str) -> bool:
        """Whether the entry's login stopped working (its refresh refused) and no login has replaced it since: a
        connection made now needs a login again, not a first one. From the file alone."""
        entry = self._recorded(name, url)
        return bool(entry and entry.get(LOGIN_LOST))

    def update(self, name: str, url: str, change: Callable[[Entry], Entry | None]) -> None:
        """Apply ``change`` to the (possibly empty) entry under the lock; returning None deletes it."""
        key = entry_key(name, url)
        try:
            with self._lock:
                try:
                    entries = self._read()
                except (OSError, ValueError) as exc:
                    raise AppError(
                        "storeCorrupted",
                        f"{self.path} cannot be read; it is left untouched until fixed",
                        path=str(self.path),
                    ) from exc
                before, written = entries.get(key), None
                updated = change(dict(_revealed(name, url, before) if before is not None else {}))
                if updated is None:
                    if key not in entries:
                        return
                    entries.pop(key)
                else:
                    written = entries[key] = {**_sealed(name, url, updated), "updatedAt": utc_now()}
                document = {"version": CREDENTIALS_VERSION, "entries": entries}
                self.path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    write_atomic(self.path, (json.dumps(document, indent=2, sort_keys=True) + "\n").encode(), 0o600)
                except BaseException:
                    _forget(name, url, written)  # the file does not name it
                    raise
                if before is not None and before.get(_REFERENCE) != entries.get(key, {}).get(_REFERENCE):
                    _forget(name, url, before)
        except Timeout as exc:
            raise AppError("serverBusy", "the credential store is locked by another writer; retry") from exc

    def in_files(self, fields: tuple[str, ...]) -> list[tuple[str, str]]:
        """(name, url) of every entry whose file still holds one of ``fields`` itself (to move into the keychain)."""
        try:
            entries = self._read()
        except (OSError, ValueError):
            return []
        found = []
        for key, entry in entries.items():
            if any(field in entry for field in fields):
                name, _, url = key.partition(" ")
                found.append((name, url))
        return found

    def keeps_secrets(self, name: str) -> bool:
        """Whether an entry of ``name`` names an item of the secret store (from the file alone)."""
        try:
            entries = self._read()
        except (OSError, ValueError):
            return False
        prefix = entry_key(name, "")
        return any(key.startswith(prefix) and isinstance(e.get(_REFERENCE), str) for key, e in entries.items())

    def record_challenge(self, name: str, url: str, scopes: list[str]) -> None:
        """Keep the scopes of the last ``insufficient_scope`` challenge of a logged-in (name, url)."""
        self.update(name, url, lambda entry: {**entry, "challengedScopes": scopes} if entry else None)

    def step_up_scopes(self, name: str, url: str) -> list[str] | None:
        """After a challenge: its scopes together with those the previous login asked for; else None."""
        entry = self.get(name, url) or {}
        challenged = entry.get("challengedScopes")
        if not isinstance(challenged, list) or not challenged:
            return None
        asked = entry.get("requestedScopes")
        if not isinstance(asked, list):
            granted = (entry.get("tokens") or {}).get("scope")
            asked = granted.split() if isinstance(granted, str) else []
        return list(dict.fromkeys(str(s) for s in [*asked, *challenged]))

    def put(self, name: str, url: str, entry: Entry) -> None:
        self.update(name, url, lambda _: entry)

    def delete(self, name: str, url: str | None = None) -> None:
        """Forget (name, url), or every URL of ``name`` when ``url`` is None (server deleted). The items go first:
        a file entry whose item is gone reads as no login, while an item no entry names would be a value left
        behind; a keychain that cannot remove them (``secretStoreLocked``) leaves the file as it was."""
        prefix = entry_key(name, "")
        try:
            with self._lock:
                try:
                    entries = self._read()
                except (OSError, ValueError) as exc:
                    raise AppError("storeCorrupted", f"{self.path} cannot be read", path=str(self.path)) from exc
                gone = [k for k in entries if (k == entry_key(name, url) if url is not None else k.startswith(prefix))]
                for key in gone:
                    recorded = entries[key].get(_REFERENCE)
                    if isinstance(recorded, str):
                        secret_store().forget(name, _field(key[len(prefix) :]), recorded)
                if gone:
                    kept = {k: v for k, v in entries.items() if k not in gone}
                    document = {"version": CREDENTIALS_VERSION, "entries": kept}
                    write_atomic(self.path, (json.dumps(document, indent=2, sort_keys=True) + "\n").encode(), 0o600)
        except Timeout as exc:
            raise AppError("serverBusy", "the credential store is locked by another writer; retry") from exc


def expires_at(tokens: dict[str, Any]) -> float | None:
    """Absolute expiry of a token response, so it survives a restart (``expires_in`` is relative)."""
    expires_in = tokens.get("expires_in")
    if expires_in is None:
        return None
    try:
        return time.time() + int(expires_in)
    except (TypeError, ValueError):
        return None


class StoredTokenStorage:
    """The SDK's ``TokenStorage`` protocol over one (name, url) entry of the envelope.

    ``binding`` gives what the tokens being stored are bound to (their DPoP key and type), written in the same
    replacement of the file as the tokens, so a reader never sees tokens with another token's key.
    """

    def __init__(
        self, store: CredentialStore, name: str, url: str, binding: Callable[[], Entry] | None = None
    ) -> None:
        self.store, self.name, self.url = store, name, url
        self.binding = binding

    def entry(self) -> Entry | None:
        return self.store.get(self.name, self.url)

    async def get_tokens(self) -> Any:
        """An ``OAuthToken`` or None."""
        import anyio
        from mcp.shared.auth import OAuthToken

        entry = await anyio.to_thread.run_sync(self.entry)
        tokens = entry.get("tokens") if entry else None
        return OAuthToken.model_validate(tokens) if isinstance(tokens, dict) else None

    async def set_tokens(self, tokens: Any) -> None:
        import anyio

        data = tokens.model_dump(mode="json", exclude_none=True)
        bound_to = self.binding() if self.binding is not None else {}

        def change(entry: Entry) -> Entry:
            kept = {k: v for k, v in entry.items() if k not in BINDING_FIELDS and k != LOGIN_LOST}
            return {**kept, "tokens": data, "expiresAt": expires_at(data), **bound_to}

        await anyio.to_thread.run_sync(self.store.update, self.name, self.url, change)

    async def get_client_info(self) -> Any:
        """An ``OAuthClientInformationFull`` or None."""
        import anyio
        from mcp.shared.auth import OAuthClientInformationFull

        entry = await anyio.to_thread.run_sync(self.entry)
        info = entry.get("clientInfo") if entry else None
        return OAuthClientInformationFull.model_validate(info) if isinstance(info, dict) else None

    async def set_client_info(self, client_info: Any) -> None:
        import anyio

        data = client_info.model_dump(mode="json", exclude_none=True)
        await anyio.to_thread.run_sync(self.store.update, self.name, self.url, lambda e: {**e, "clientInfo": data})
