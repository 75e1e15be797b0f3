"""Claude Desktop: ``claude_desktop_config.json`` in the platform's app-support folder, ``mcpServers``.

Its file holds local (stdio) servers only — remote servers are added as connectors in the app — and it
expands no variables: ``${X}`` is passed literally, so no secret can be referenced: a server needing
``envVars`` (or a literal value under a secret-looking name) cannot be written. Imported values are taken
literally, as Claude Desktop would use them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_runtime.importers.claude import read_claude_entry
from mcp_runtime.importers.common import (
    AppSpec,
    NotExpressible,
    config_home,
    require_no_tool_filters,
    stdio_env,
)
from protocol.config import McpServerConfig, StdioServerConfig

LABEL = "Claude Desktop"


def default_path(home: Path, env: Mapping[str, str], platform: str) -> Path:
    return config_home(home, env, platform) / "Claude" / "claude_desktop_config.json"


def read_entry(raw: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    del warnings
    return read_claude_entry(raw, None, LABEL)


def write_entry(config: McpServerConfig, warnings: list[str]) -> dict[str, Any]:
    del warnings
    if not isinstance(config, StdioServerConfig):
        raise NotExpressible(f"{LABEL}'s config file holds only local (stdio) servers; add remote ones as connectors")
    require_no_tool_filters(config, LABEL)
    if config.cwd is not None:
        raise NotExpressible(f"{LABEL} has no working-directory (cwd) setting")
    entry: dict[str, Any] = {"command": config.command, "args": list(config.args)}
    env = stdio_env(config, None, LABEL)
    if env:
        entry["env"] = env
    return entry


SPEC = AppSpec("claudeDesktop", LABEL, "json", "mcpServers", default_path, read_entry, write_entry)
