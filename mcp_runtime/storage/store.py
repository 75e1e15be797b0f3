"""The app's server store, ``<dataDir>/mcps.json``: atomic, locked, revisioned, never half-written.

Every mutation takes the file lock, re-reads a file another writer changed and replaces it atomically. A file
that does not parse is never overwritten (it is the user's): the store turns read-only and reports
``storeCorrupted`` until the file is fixed.
"""

from __future__ import annotations

import builtins
import json
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mcp_runtime.config.edits import to_wire
from mcp_runtime.config.rules import parse_server_config
from mcp_runtime.limits import MAX_CONFIG_BYTES, MAX_SERVERS
from mcp_runtime.secrets import configs as _secrets
from mcp_runtime.secrets.store import secret_store
from mcp_runtime.session.kept_launch import digest
from mcp_runtime.storage import safe_fs as _safe_fs
from mcp_runtime.storage.clock import utc_now
from protocol.config import AppName, AppTargets, McpServerConfig
from protocol.jsonrpc import AppError

STORE_VERSION = 1
STORE_FILE = "mcps.json"
_LOCK_FILE = ".mcps.json.lock"
_META_KEYS = ("revision", "createdAt", "updatedAt", "source")
_LOCK_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class StoredServer:
    name: str
    config: McpServerConfig
    revision: int
    source: str
    created_at: str
    updated_at: str


def _entry(server: StoredServer) -> dict[str, Any]:
    return {
        **to_wire(server.config),
        "revision": server.revision,
        "createdAt": server.created_at,
        "updatedAt": server.updated_at,
        "source": server.source,
    }


def _parse_entry(name: str, raw: Any) -> StoredServer:
    if not isinstance(raw, dict):
        raise ValueError(f"entry {name!r} is not an object")
    body = {k: v for k, v in raw.items() if k not in _META_KEYS}
    revision, source = raw.get("revision", 1), raw.get("source", "user")
    created, updated = raw.get("createdAt", ""), raw.get("updatedAt", "")
    if not isinstance(revision, int) or not all(isinstance(v, str) for v in (source, created, updated)):
        raise ValueError(f"entry {name!r} has invalid metadata")
    try:
        config = parse_server_config(name, body)
    except AppError as exc:
        raise ValueError(f"entry {name!r}: {exc.reason}: {exc.message}") from exc
    return StoredServer(name, config, revision, source, created or utc_now(), updated or created or utc_now())


def encode(servers: Iterable[StoredServer]) -> bytes:
    document = {"version": STORE_VERSION, "mcpServers": {s.name: _entry(s) for s in servers}}
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def write_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never a mix.

    ``path`` itself is never followed if it is a symlink (``unsafePath``); callers writing inside the data
    dir use :func:`mcp_runtime.storage.safe_fs.write_file` from the data dir, which checks every folder too.
    """
    _safe_fs.write_file(path.parent, path.name, data, mode)


class ConfigStore:
    """The revisioned server store; operations are synchronous and short (one small file)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.path = data_dir / STORE_FILE
        self._stamp: tuple[int, int, int] | None = None
        self._servers: dict[str, StoredServer] = {}
        self._corruption: str | None = None
        self._unsafe = False
        self.digest: str | None = None
        """The ``kept_launch.digest`` of the file's bytes the servers were read from (None before a read)."""
        self._refresh()

    @property
    def corruption(self) -> str | None:
        """Why the store is read-only, or None when it is healthy."""
        self._refresh()
        return f"{self.path.name} is not a regular file" if self._unsafe else self._corruption

    def _refresh(self) -> None:
        self._unsafe = False
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            self._stamp, self._servers, self._corruption = None, {}, None
            return
        if not stat.S_ISREG(st.st_mode):  # a planted symlink (or a FIFO) is never read nor replaced
            self._stamp, self._servers, self._corruption, self._unsafe = None, {}, None, True
            return
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp == self._stamp:
            return
        self._stamp = stamp
        try:
            self._servers, self._corruption = self._load(st.st_size), None
        except AppError:  # unsafePath: swapped for a link between the lstat and the open
            self._stamp, self._servers, self._corruption, self._unsafe = None, {}, None, True
        except (OSError, ValueError) as exc:
            self._servers, self._corruption = {}, str(exc)[:500]

    def _load(self, size: int) -> dict[str, StoredServer]:
        data = _safe_fs.read_file(self.data_dir, STORE_FILE, MAX_CONFIG_BYTES) or b""
        if max(size, len(data)) > MAX_CONFIG_BYTES:
            raise ValueError(f"{self.path.name} is larger than {MAX_CONFIG_BYTES} bytes")
        document = json.loads(data)
        self.digest = digest(data)
        if not isinstance(document, dict) or document.get("version") != STORE_VERSION:
            raise ValueError(f"{self.path.name} has an unknown version")
        servers = document.get("mcpServers", {})
        if not isinstance(servers, dict):
            raise ValueError("mcpServers is not an object")
        return {name: _parse_entry(name, raw) for name, raw in servers.items()}

    def _check_healthy(self) -> None:
        if self._unsafe:
            raise _safe_fs.unsafe(self.path, "not a regular file (a symlink?); it is never read or replaced")
        if self._corruption is not None:
            raise AppError(
                "storeCorrupted",
                f"{self.path} cannot be read; it is left untouched until fixed: {self._corruption}",
                path=str(self.path),
            )

    def list(self) -> list[StoredServer]:
        self._refresh()
        self._check_healthy()
        return sorted(self._servers.values(), key=lambda s: s.name)

    def get(self, name: str) -> StoredServer | None:
        self._refresh()
        self._check_healthy()
        return self._servers.get(name)

    def require(self, name: str) -> StoredServer:
        server = self.get(name)
        if server is None:
            raise AppError("unknownServer", f"no server named {name!r}", server=name)
        return server

    def _mutate(self, apply: Callable[[dict[str, StoredServer]], dict[str, StoredServer | None]]) -> None:
        """Run ``apply`` on the current servers under the lock; it returns name → new record (None deletes)."""
        from filelock import Timeout  # with the lock, on the first write: a read (the first list) needs neither

        keeper = secret_store()
        written: dict[str, dict[str, str]] = {}
        dropped: dict[str, dict[str, str]] = {}
        committed = False
        try:
            with _safe_fs.lock(self.data_dir, _LOCK_FILE, _LOCK_TIMEOUT_S):
                self._refresh()
                self._check_healthy()
                servers = dict(self._servers)
                for name, server in apply(servers).items():
                    before = servers[name].config if name in servers else None
                    if server is None:
                        servers.pop(name, None)
                    else:
                        # the secrets first (each under a fresh item), then the file that names them
                        sealed = _secrets.seal(keeper, name, server.config, before)
                        written[name] = _secrets.left_behind(sealed, before)
                        servers[name] = server = replace(server, config=sealed)
                    dropped[name] = _secrets.left_behind(before, server.config if server is not None else None)
                if len(servers) > MAX_SERVERS:
                    raise AppError("tooManyServers", f"at most {MAX_SERVERS} servers can be stored", limit=MAX_SERVERS)
                data = encode(sorted(servers.values(), key=lambda s: s.name))
                if len(data) > MAX_CONFIG_BYTES:
                    raise AppError(
                        "configTooLarge", f"the store would exceed {MAX_CONFIG_BYTES} bytes", limit=MAX_CONFIG_BYTES
                    )
                _safe_fs.write_file(self.data_dir, STORE_FILE, data)
                committed = True
                self._servers, self._stamp = servers, None
                self._refresh()
        except BaseException as exc:
            for name, recorded in written.items() if not committed else ():  # no file names the new items
                _secrets.forget(keeper, name, recorded)
            if isinstance(exc, Timeout):
                raise AppError("serverBusy", "the server store is locked by another writer; retry") from exc
            raise
        for name, recorded in dropped.items():
            _secrets.forget(keeper, name, recorded)

    def create(self, name: str, config: McpServerConfig, source: str = "user") -> StoredServer:
        return self.create_many({name: config}, source)[0]

    def create_many(self, configs: dict[str, McpServerConfig], source: str) -> builtins.list[StoredServer]:
        """Create every server or none."""
        now = utc_now()
        created = {name: StoredServer(name, config, 1, source, now, now) for name, config in configs.items()}

        def apply(servers: dict[str, StoredServer]) -> dict[str, StoredServer | None]:
            for name in created:
                if name in servers:
                    raise AppError("serverExists", f"a server named {name!r} already exists", name=name)
            return dict(created)

        self._mutate(apply)
        return list(created.values())

    def _replace(
        self, name: str, change: Callable[[StoredServer], McpServerConfig], expected: int | None
    ) -> StoredServer:
        result: list[StoredServer] = []

        def apply(servers: dict[str, StoredServer]) -> dict[str, StoredServer | None]:
            current = servers.get(name)
            if current is None:
                raise AppError("unknownServer", f"no server named {name!r}", server=name)
            if expected is not None and expected != current.revision:
                raise AppError(
                    "revisionMismatch",
                    f"server {name!r} is at revision {current.revision}, not {expected}",
                    name=name,
                    revision=current.revision,
                )
            result.append(replace(current, config=change(current), revision=current.revision + 1, updated_at=utc_now()))
            return {name: result[0]}

        self._mutate(apply)
        return result[0]

    def update(self, name: str, config: McpServerConfig, expected_revision: int | None = None) -> StoredServer:
        return self._replace(name, lambda _: config, expected_revision)

    def edit(
        self, name: str, change: Callable[[McpServerConfig], McpServerConfig], expected_revision: int | None = None
    ) -> StoredServer:
        """Replace a config with ``change(stored config)``, computed under the lock (lossless edits, patches)."""
        return self._replace(name, lambda current: change(current.config), expected_revision)

    def reinstall(self, name: str, config: McpServerConfig, source: str) -> StoredServer:
        """A newer install over a stored server (a bundle's next version): its config and its source both change."""
        result: list[StoredServer] = []

        def apply(servers: dict[str, StoredServer]) -> dict[str, StoredServer | None]:
            current = servers.get(name)
            if current is None:
                raise AppError("unknownServer", f"no server named {name!r}", server=name)
            result.append(
                replace(current, config=config, source=source, revision=current.revision + 1, updated_at=utc_now())
            )
            return {name: result[0]}

        self._mutate(apply)
        return result[0]

    def set_enabled(self, name: str, enabled: bool, app: AppName | None = None) -> StoredServer:
        def change(current: StoredServer) -> McpServerConfig:
            if app is None:
                return current.config.model_copy(update={"enabled": enabled})
            targets = current.config.apps or AppTargets()
            field = AppTargets.field_of(app)
            return current.config.model_copy(update={"apps": targets.model_copy(update={field: enabled})})

        return self._replace(name, change, None)

    def delete(self, name: str) -> None:
        def apply(servers: dict[str, StoredServer]) -> dict[str, StoredServer | None]:
            if name not in servers:
                raise AppError("unknownServer", f"no server named {name!r}", server=name)
            return {name: None}

        self._mutate(apply)
