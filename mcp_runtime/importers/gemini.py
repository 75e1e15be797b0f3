"""Gemini CLI: ``~/.gemini/settings.json``, ``mcpServers``.

Streamable HTTP is ``httpUrl`` (or ``url`` with ``type: "http"``; a bare ``url`` is SSE, unsupported);
``timeout`` is milliseconds (our ``toolTimeoutMs``); ``includeTools``/``excludeTools`` are the tool filters.
Gemini expands ``$VAR`` and ``${VAR}`` in settings strings, which is how secrets are referenced.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_runtime.importers.common import (
    DOLLAR_ANY,
    AppSpec,
    check_oauth,
    copy_present,
    http_headers,
    plain,
    plain_list,
    read_env,
    read_headers,
    reject_unknown,
    stdio_env,
    unsupported,
)
from protocol.config import McpServerConfig, StdioServerConfig

LABEL = "Gemini CLI"
_KNOWN = {
    "command", "args", "env", "cwd", "url", "httpUrl", "type", "headers", "timeout",
    "includeTools", "excludeTools", "description", "oauth", "trust", "authProviderType",
}  # fmt: skip
_OAUTH_KNOWN = {"enabled", "scopes", "clientId"}
_COMMON = {
    "timeout": "toolTimeoutMs",
    "includeTools": "enabledTools",
    "excludeTools": "disabledTools",
    "description": "description",
}


def default_path(home: Path, env: Mapping[str, str], platform: str) -> Path:
    del env, platform
    return home / ".gemini" / "settings.json"


def _read_oauth(raw: Any) -> Any:
    if not isinstance(raw, dict):
        return raw
    reject_unknown(raw, _OAUTH_KNOWN, f"{LABEL} oauth")
    if raw.get("enabled") is False:
        return None
    oauth: dict[str, Any] = {}
    if "scopes" in raw:
        oauth["scopes"] = raw["scopes"]
    if "clientId" in raw:
        oauth["clientId"] = raw["clientId"]  # a pre-registered client (its secret is never imported)
    return oauth


def read_entry(raw: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    reject_unknown(raw, _KNOWN, LABEL)
    if raw.get("authProviderType", "dynamic_discovery") != "dynamic_discovery":
        raise unsupported(f"{LABEL} authProviderType {raw['authProviderType']!r} is not supported")
    if raw.get("trust"):
        warnings.append("'trust' (skip tool confirmations) is not imported")
    refs = DOLLAR_ANY
    wire: dict[str, Any]
    if "httpUrl" in raw or ("url" in raw and raw.get("type") == "http"):
        if "httpUrl" in raw and "url" in raw:
            raise unsupported(f"{LABEL} entry sets both httpUrl and url")
        wire = {"type": "http", "url": plain(raw.get("httpUrl", raw.get("url")), "httpUrl", refs)}
        if "headers" in raw:
            read_headers(raw["headers"], refs, wire)
        if raw.get("oauth") is not None:
            oauth = _read_oauth(raw["oauth"])
            if oauth is not None:
                wire["oauth"] = oauth
    elif "url" in raw or raw.get("type") == "sse":
        raise unsupported(f"{LABEL} SSE servers (url without type http) are not supported")
    else:
        wire = {"type": "stdio"}
        for field in ("headers", "oauth"):
            if field in raw:
                wire[field] = raw[field]
        if "env" in raw:
            read_env(raw["env"], refs, wire)
    for field in ("command", "cwd"):
        if field in raw:
            wire[field] = plain(raw[field], field, refs)
    if "args" in raw:
        wire["args"] = plain_list(raw["args"], "args", refs)
    if "type" in raw and raw["type"] not in ("http", "stdio"):
        raise unsupported(f"{LABEL} server type {raw['type']!r} is not supported")
    copy_present(raw, wire, _COMMON)
    return wire


def write_entry(config: McpServerConfig, warnings: list[str]) -> dict[str, Any]:
    entry: dict[str, Any]
    if isinstance(config, StdioServerConfig):
        entry = {"command": config.command, "args": list(config.args)}
        env = stdio_env(config, DOLLAR_ANY, LABEL)
        if env:
            entry["env"] = env
        if config.cwd is not None:
            entry["cwd"] = config.cwd
    else:
        check_oauth(config, LABEL, warnings, scopes_supported=True)
        entry = {"httpUrl": config.url}
        headers = http_headers(config, DOLLAR_ANY, LABEL)
        if headers:
            entry["headers"] = headers
        if config.oauth is not None and config.oauth.scopes:
            entry["oauth"] = {"enabled": True, "scopes": list(config.oauth.scopes)}
    if "tool_timeout_ms" in config.model_fields_set:
        entry["timeout"] = config.tool_timeout_ms
    if config.enabled_tools is not None:
        entry["includeTools"] = list(config.enabled_tools)
    if config.disabled_tools:
        entry["excludeTools"] = list(config.disabled_tools)
    if config.description:
        entry["description"] = config.description
    return entry


SPEC = AppSpec("gemini", LABEL, "json", "mcpServers", default_path, read_entry, write_entry)
