"""Claude Code: ``~/.claude.json`` (or ``$CLAUDE_CONFIG_DIR/.claude.json``), user-scope ``mcpServers``.

Import also reads the project scope, ``projects.<dir>.mcpServers`` (where ``claude mcp add`` writes by
default); sync writes the user scope only.

Entries: ``{type?: "stdio", command, args, env}`` or ``{type: "http", url, headers}``; Claude Code expands
``${VAR}`` in command, args, env, url and headers, so that is how secrets are referenced. ``sse`` servers,
``headersHelper`` and per-server OAuth client settings have no equivalent here and are unsupported.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_runtime.importers.common import (
    DOLLAR_BRACE,
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
from mcp_runtime.importers.documents import parse_entries
from protocol.config import McpServerConfig

LABEL = "Claude Code"
_KNOWN = {"type", "command", "args", "env", "url", "headers"}


def default_path(home: Path, env: Mapping[str, str], platform: str) -> Path:
    del platform
    config_dir = env.get("CLAUDE_CONFIG_DIR")
    return (Path(config_dir) if config_dir else home) / ".claude.json"


def read_claude_entry(raw: dict[str, Any], refs: RefSyntax | None, label: str) -> dict[str, Any]:
    """The Claude entry shape, shared with Claude Desktop (which expands nothing: ``refs`` None)."""
    reject_unknown(raw, _KNOWN, label)
    kind = raw.get("type")
    if kind is None:
        kind = "http" if "url" in raw and "command" not in raw else "stdio"
    if kind == "stdio":
        wire: dict[str, Any] = {"type": "stdio"}
        for field in ("command", "url", "headers"):
            if field in raw:
                wire[field] = plain(raw[field], field, refs)
        if "args" in raw:
            wire["args"] = plain_list(raw["args"], "args", refs)
        if "env" in raw:
            read_env(raw["env"], refs, wire)
        return wire
    if kind == "http":
        wire = {"type": "http"}
        for field in ("url", "command", "args", "env"):
            if field in raw:
                wire[field] = plain(raw[field], field, refs)
        if "headers" in raw:
            read_headers(raw["headers"], refs, wire)
        return wire
    raise unsupported(f"{label} server type {kind!r} is not supported (only stdio and streamable http)")


def read_entry(raw: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    del warnings
    return read_claude_entry(raw, DOLLAR_BRACE, LABEL)


def write_entry(config: McpServerConfig, warnings: list[str]) -> dict[str, Any]:
    return write_json_entry(config, warnings, label=LABEL, refs=DOLLAR_BRACE, with_type=True, with_cwd=False)


def project_scopes(text: str) -> list[tuple[str, dict[str, Any]]]:
    """``projects.<dir>.mcpServers``, one scope per project directory (sorted, so clashes resolve the same way)."""
    projects = parse_entries("json", text, "projects")
    scopes: list[tuple[str, dict[str, Any]]] = []
    for directory in sorted(projects):
        project = projects[directory]
        servers = project.get("mcpServers") if isinstance(project, dict) else None
        if isinstance(servers, dict) and servers:
            scopes.append((f"project {directory}", servers))
    return scopes


SPEC = AppSpec("claude", LABEL, "json", "mcpServers", default_path, read_entry, write_entry, project_scopes)
