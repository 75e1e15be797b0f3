"""Cursor: ``~/.cursor/mcp.json``, ``mcpServers``.

Entries: ``{command, args, env}`` or ``{url, headers}`` (Cursor infers the transport; ``type: "sse"`` is
unsupported). Cursor interpolates ``${env:NAME}`` in command, args, env, url and headers — the reference
form written for secrets. ``envFile`` and other variables (``${userHome}``, ...) are unsupported on import.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_runtime.importers.common import (
    ENV_COLON,
    AppSpec,
    RefSyntax,
    plain,
    plain_list,
    read_env,
    read_headers,
    reject_unknown,
    unsupported,
    write_json_entry,
)
from protocol.config import McpServerConfig

LABEL = "Cursor"
_KNOWN = {"type", "command", "args", "env", "url", "headers"}
HTTP_TYPES = ("http", "streamable-http", "streamableHttp")


def default_path(home: Path, env: Mapping[str, str], platform: str) -> Path:
    del env, platform
    return home / ".cursor" / "mcp.json"


def read_vscode_like(raw: dict[str, Any], refs: RefSyntax, label: str, *, with_cwd: bool) -> dict[str, Any]:
    """The Cursor/VS Code entry shape: transport from ``type`` or inferred from ``command``/``url``."""
    kind = raw.get("type")
    if kind is None:
        kind = "http" if "url" in raw and "command" not in raw else "stdio"
    if kind in HTTP_TYPES:
        wire: dict[str, Any] = {"type": "http"}
        if "headers" in raw:
            read_headers(raw["headers"], refs, wire)
        for field in ("command", "args", "env", "cwd"):
            if field in raw:
                wire[field] = raw[field]
    elif kind == "stdio":
        wire = {"type": "stdio"}
        if "env" in raw:
            read_env(raw["env"], refs, wire)
        if "args" in raw:
            wire["args"] = plain_list(raw["args"], "args", refs)
        for field in ("command", "headers", *(("cwd",) if with_cwd else ())):
            if field in raw:
                wire[field] = plain(raw[field], field, refs)
    else:
        raise unsupported(f"{label} server type {kind!r} is not supported (only stdio and streamable http)")
    if "url" in raw:
        wire["url"] = plain(raw["url"], "url", refs)
    return wire


def read_entry(raw: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    del warnings
    reject_unknown(raw, _KNOWN, LABEL)
    return read_vscode_like(raw, ENV_COLON, LABEL, with_cwd=False)


def write_entry(config: McpServerConfig, warnings: list[str]) -> dict[str, Any]:
    return write_json_entry(config, warnings, label=LABEL, refs=ENV_COLON, with_type=False, with_cwd=False)


SPEC = AppSpec("cursor", LABEL, "json", "mcpServers", default_path, read_entry, write_entry)
