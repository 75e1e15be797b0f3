"""VS Code: user-profile ``mcp.json`` (JSONC), top-level ``servers``; each entry carries ``type``.

Entries: ``{type: "stdio", command, args, env, cwd}`` or ``{type: "http", url, headers}``. VS Code resolves
``${env:NAME}`` — the reference form written for secrets. ``${input:...}`` prompts, ``envFile`` and ``sse``
servers are unsupported on import; the gallery metadata keys (``gallery``, ``version``) are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_runtime.importers.common import (
    ENV_COLON,
    AppSpec,
    config_home,
    reject_unknown,
    write_json_entry,
)
from mcp_runtime.importers.cursor import read_vscode_like
from protocol.config import McpServerConfig

LABEL = "VS Code"
_KNOWN = {"type", "command", "args", "env", "cwd", "url", "headers"}
_IGNORED = {"gallery", "version"}


def default_path(home: Path, env: Mapping[str, str], platform: str) -> Path:
    return config_home(home, env, platform) / "Code" / "User" / "mcp.json"


def read_entry(raw: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    del warnings
    reject_unknown(raw, _KNOWN | _IGNORED, LABEL)
    fields = {k: v for k, v in raw.items() if k not in _IGNORED}
    return read_vscode_like(fields, ENV_COLON, LABEL, with_cwd=True)


def write_entry(config: McpServerConfig, warnings: list[str]) -> dict[str, Any]:
    return write_json_entry(config, warnings, label=LABEL, refs=ENV_COLON, with_type=True, with_cwd=True)


SPEC = AppSpec("vscode", LABEL, "json", "servers", default_path, read_entry, write_entry)
