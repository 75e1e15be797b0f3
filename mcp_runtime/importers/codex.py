"""Codex: ``$CODEX_HOME/config.toml`` (default ``~/.codex/config.toml``), tables ``[mcp_servers.<name>]``.

Codex has native fields for everything secret (``env_vars``, ``env_http_headers``, ``bearer_token_env_var``)
and expands nothing inside strings, so the mapping is field to field; timeouts are seconds there.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_runtime.importers.common import (
    AppSpec,
    check_oauth,
    copy_present,
    literal_values,
    reject_unknown,
    unsupported,
)
from protocol.config import McpServerConfig, StdioServerConfig

LABEL = "Codex"
_FIELDS = {
    "command": "command",
    "args": "args",
    "env": "env",
    "env_vars": "envVars",
    "cwd": "cwd",
    "url": "url",
    "bearer_token_env_var": "bearerTokenEnvVar",
    "http_headers": "headers",
    "env_http_headers": "envHeaders",
    "enabled": "enabled",
    "enabled_tools": "enabledTools",
    "disabled_tools": "disabledTools",
}
_TIMEOUTS = {"startup_timeout_sec": "startupTimeoutMs", "tool_timeout_sec": "toolTimeoutMs"}


def default_path(home: Path, env: Mapping[str, str], platform: str) -> Path:
    del platform
    codex_home = env.get("CODEX_HOME")
    return (Path(codex_home) if codex_home else home / ".codex") / "config.toml"


def _ms(value: Any) -> Any:
    """Seconds (int or float) to whole milliseconds; anything else is left for validation to reject."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return round(value * 1000)
    return value


def read_entry(raw: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    del warnings
    reject_unknown(raw, set(_FIELDS) | set(_TIMEOUTS) | {"startup_timeout_ms"}, LABEL)
    if "startup_timeout_ms" in raw and "startup_timeout_sec" in raw:
        raise unsupported("Codex startup_timeout_ms and startup_timeout_sec are both set")
    wire: dict[str, Any] = {"type": "http" if "url" in raw else "stdio"}
    copy_present(raw, wire, _FIELDS)
    for source, target in _TIMEOUTS.items():
        if source in raw:
            wire[target] = _ms(raw[source])
    if "startup_timeout_ms" in raw:
        wire["startupTimeoutMs"] = raw["startup_timeout_ms"]
    return wire


def _seconds(ms: int) -> int | float:
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


def write_entry(config: McpServerConfig, warnings: list[str]) -> dict[str, Any]:
    entry: dict[str, Any]
    if isinstance(config, StdioServerConfig):
        entry = {"command": config.command, "args": list(config.args)}
        if config.env:
            entry["env"] = literal_values(config.env, "env", None, LABEL)
        if config.env_vars:
            entry["env_vars"] = list(config.env_vars)
        if config.cwd is not None:
            entry["cwd"] = config.cwd
    else:
        check_oauth(config, LABEL, warnings, scopes_supported=False)
        entry = {"url": config.url}
        if config.headers:
            entry["http_headers"] = literal_values(config.headers, "headers", None, LABEL)
        if config.bearer_token_env_var:
            entry["bearer_token_env_var"] = config.bearer_token_env_var
        if config.env_headers:
            entry["env_http_headers"] = dict(config.env_headers)
    # Only timeouts the user set: Codex's own defaults apply otherwise.
    if "startup_timeout_ms" in config.model_fields_set:
        entry["startup_timeout_sec"] = _seconds(config.startup_timeout_ms)
    if "tool_timeout_ms" in config.model_fields_set:
        entry["tool_timeout_sec"] = _seconds(config.tool_timeout_ms)
    if config.enabled_tools is not None:
        entry["enabled_tools"] = list(config.enabled_tools)
    if config.disabled_tools:
        entry["disabled_tools"] = list(config.disabled_tools)
    return entry


SPEC = AppSpec("codex", LABEL, "toml", "mcp_servers", default_path, read_entry, write_entry)
