"""The start-up path: ``initialize`` and the first ``mcpServer/list`` of a fresh data dir, without pydantic.

A sidecar is waited on until it answers ``initialize``, and pydantic alone costs about 100 ms to
import here. Plainly valid params (the common case) are recognised with a strict check; anything
else goes to the catalog's pydantic model, which decides and produces the typed error. Tests check
that this path agrees with ``InitializeParams`` and that its answer validates as ``InitializeResult``.
The models load in a worker thread once the client is initialized; until then, a data dir without a
store file lists no servers, which needs no model either.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

STORE_FILE = "mcps.json"
"""``mcp_runtime.store.STORE_FILE`` (a test keeps the two equal)."""
PROTOCOL_VERSION = "2026-11-30"

_PARAMS_KEYS = frozenset({"clientInfo", "capabilities"})
_CLIENT_KEYS = frozenset({"name", "version", "title"})


def quick_params(params: Any) -> tuple[str, str, frozenset[str]] | None:
    """``(client name, client version, opt-outs)`` for plainly valid params, else None."""
    if not isinstance(params, dict) or not params.keys() <= _PARAMS_KEYS:
        return None
    info = params.get("clientInfo")
    if not isinstance(info, dict) or not info.keys() <= _CLIENT_KEYS:
        return None
    name, version, title = info.get("name"), info.get("version"), info.get("title", "")
    if not (isinstance(name, str) and name and isinstance(version, str) and isinstance(title, str)):
        return None
    capabilities = params.get("capabilities", {})
    if not isinstance(capabilities, dict) or "opt_out_notification_methods" in capabilities:
        return None  # unknown capabilities are ignored; the field's Python name is left to the model
    opt_outs = capabilities.get("optOutNotificationMethods", [])
    if not isinstance(opt_outs, list) or not all(isinstance(m, str) for m in opt_outs):
        return None
    return name, version, frozenset(opt_outs)


def result(
    *, version: str, protocol_version: str, client: tuple[str, str], data_dir: str, methods: list[str],
    notifications: list[str]
) -> dict[str, Any]:
    """The ``InitializeResult`` in wire form."""
    return {
        "serverInfo": {"name": "mcp-app-server", "version": version},
        "protocolVersion": protocol_version,
        "userAgent": f"mcp-app-server/{version} ({client[0]}/{client[1]})",
        "dataDir": data_dir,
        "methods": methods,
        "notifications": notifications,
    }


def line(message: dict[str, Any]) -> bytes:
    """A message line as ``connection.encode`` writes it (compact JSON; lone surrogates escaped). The answers here
    are written by this one function on both paths (``app_server.early`` and the processor), so they are the same
    bytes whichever path answers."""
    try:
        return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def initialize_line(request_id: int | str, client: tuple[str, str], data_dir: str) -> bytes:
    """The ``initialize`` response line (the catalog's names are plain dicts: no model is imported)."""
    from app_server import __version__
    from protocol.catalog import METHODS, NOTIFICATIONS

    answer = result(
        version=__version__,
        protocol_version=PROTOCOL_VERSION,
        client=client,
        data_dir=data_dir,
        methods=sorted(m for m in METHODS if m != "initialize"),
        notifications=sorted(NOTIFICATIONS),
    )
    return line({"jsonrpc": "2.0", "id": request_id, "result": answer})


def empty_server_list(params: Any, data_dir: Path | str) -> dict[str, Any] | None:
    """The ``mcpServer/list`` result when no store file exists and the params are empty, else None.

    The store itself treats a missing file as no servers (it never creates it on a read)."""
    if params is not None and params != {}:
        return None
    try:
        os.lstat(os.path.join(data_dir, STORE_FILE))
    except FileNotFoundError:
        return {"data": []}
    except OSError:
        return None
    return None


def stored_enabled_names(data_dir: Path, limit: int) -> frozenset[str]:
    """The servers the store file marks enabled (``enabled`` defaults to true), read as plain JSON.

    Autostart decides on this snapshot when the client is initialized, before any request can change the
    store, and starts those still enabled once the models are loaded; a file the store would refuse lists
    none (the store reports it). ``mcp_runtime.safe_fs`` keeps the read inside the data dir."""
    from mcp_runtime import safe_fs

    try:
        data = safe_fs.read_file(data_dir, STORE_FILE, limit)
        document = json.loads(data) if data is not None and len(data) <= limit else None
    except Exception:
        return frozenset()
    servers = document.get("mcpServers") if isinstance(document, dict) else None
    if not isinstance(servers, dict):
        return frozenset()
    return frozenset(
        name for name, entry in servers.items() if isinstance(entry, dict) and entry.get("enabled", True) is not False
    )
