"""What every app adapter shares: the adapter record, env-reference syntaxes and the field translations.

Import turns an app's entry into our wire dict (then ``parse_server_config`` decides validity). Sync turns
a validated config into the app's entry, or raises :class:`NotExpressible` when the app cannot carry it
safely: secrets leave this daemon only as the app's own environment-variable references, never as values.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_runtime.config.rules import is_sensitive_header
from mcp_runtime.importers.documents import FileFormat
from protocol.config import AppName, HttpServerConfig, McpServerConfig, StdioServerConfig
from protocol.jsonrpc import AppError

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


class NotExpressible(Exception):
    """The app's config format cannot hold this server safely; it is skipped with a warning."""


@dataclass(frozen=True)
class RefSyntax:
    """How an app spells "the value of environment variable NAME" inside a string."""

    whole: re.Pattern[str]  # a string that is exactly one reference; group 1 or 2 is the name
    anywhere: re.Pattern[str]  # any interpolation syntax of that app (references and other variables)
    template: str  # e.g. "${env:NAME}"; NAME is replaced by the variable name

    def name_of(self, value: str) -> str | None:
        match = self.whole.fullmatch(value)
        return next((g for g in match.groups() if g), None) if match else None

    def format(self, name: str) -> str:
        return self.template.replace("NAME", name)


DOLLAR_BRACE = RefSyntax(re.compile(rf"\$\{{({_NAME})\}}"), re.compile(r"\$\{[^}]*\}"), "${NAME}")
DOLLAR_ANY = RefSyntax(
    re.compile(rf"\$\{{({_NAME})\}}|\$({_NAME})"), re.compile(rf"\$\{{[^}}]*\}}|\${_NAME}"), "${NAME}"
)
ENV_COLON = RefSyntax(re.compile(rf"\$\{{env:({_NAME})\}}"), re.compile(r"\$\{[^}]*\}"), "${env:NAME}")


@dataclass(frozen=True)
class AppSpec:
    """One external app: where its user config lives, its format, and the two translations."""

    app: AppName
    label: str
    fmt: FileFormat
    section: str
    default_path: Callable[[Path, Mapping[str, str], str], Path]  # (home, env, sys.platform)
    read_entry: Callable[[dict[str, Any], list[str]], dict[str, Any]]  # app entry -> wire dict (+ warnings)
    write_entry: Callable[[McpServerConfig, list[str]], dict[str, Any]]  # config -> app entry (+ warnings)
    more_scopes: Callable[[str], list[tuple[str, dict[str, Any]]]] | None = None  # file text -> (scope, entries)


def unsupported(message: str, **details: Any) -> AppError:
    return AppError("unsupported", message, **details)


def reject_unknown(raw: Mapping[str, Any], known: set[str], label: str) -> None:
    """Fields we cannot carry make the entry unsupported rather than silently dropped."""
    unknown = sorted(set(raw) - known)
    if unknown:
        raise unsupported(f"{label} field {unknown[0]!r} is not supported", field=unknown[0])


def plain(value: Any, field: str, refs: RefSyntax | None) -> Any:
    """A string copied as is; interpolation there would be expanded by the app but never by us."""
    if refs is not None and isinstance(value, str) and refs.anywhere.search(value):
        raise unsupported(f"{field} uses a variable reference, which is not expanded here", field=field)
    return value


def plain_list(values: Any, field: str, refs: RefSyntax | None) -> Any:
    if isinstance(values, list):
        return [plain(v, f"{field}.{i}", refs) for i, v in enumerate(values)]
    return values


def read_env(env: Any, refs: RefSyntax | None, wire: dict[str, Any]) -> None:
    """``{"X": "${X}"}`` becomes ``envVars: ["X"]``; literals stay in ``env``; other references fail."""
    if not isinstance(env, dict):
        wire["env"] = env
        return
    literals: dict[str, Any] = {}
    passed: list[str] = []
    for key, value in env.items():
        name = refs.name_of(value) if refs is not None and isinstance(value, str) else None
        if name is None:
            literals[key] = plain(value, f"env.{key}", refs)
        elif name == key:
            passed.append(key)
        else:
            raise unsupported(
                f"env.{key} refers to another variable ({name}); only same-name pass-through is supported"
            )
    if literals:
        wire["env"] = literals
    if passed:
        wire["envVars"] = passed


def read_headers(headers: Any, refs: RefSyntax | None, wire: dict[str, Any]) -> None:
    """``"${V}"`` → ``envHeaders``, ``Authorization: "Bearer ${V}"`` → ``bearerTokenEnvVar``, else literal."""
    if not isinstance(headers, dict):
        wire["headers"] = headers
        return
    literals: dict[str, Any] = {}
    env_headers: dict[str, str] = {}
    for key, value in headers.items():
        name = refs.name_of(value) if refs is not None and isinstance(value, str) else None
        bearer = None
        if refs is not None and isinstance(value, str) and str(key).lower() == "authorization":
            parts = value.split(None, 1)
            if len(parts) == 2 and parts[0].lower() == "bearer":
                bearer = refs.name_of(parts[1].strip())
        if bearer is not None:
            wire["bearerTokenEnvVar"] = bearer
        elif name is not None:
            env_headers[key] = name
        else:
            literals[key] = plain(value, f"headers.{key}", refs)
    if literals:
        wire["headers"] = literals
    if env_headers:
        wire["envHeaders"] = env_headers


def copy_present(raw: Mapping[str, Any], wire: dict[str, Any], mapping: Mapping[str, str]) -> None:
    for source, target in mapping.items():
        if source in raw:
            wire[target] = raw[source]


# --- writing ------------------------------------------------------------------------------------------


def literal_values(values: Mapping[str, str], field: str, refs: RefSyntax | None, app_label: str) -> dict[str, str]:
    """Literal env/header values written as they are, unless the name looks secret or the app would expand them."""
    for name, value in values.items():
        if is_sensitive_header(name):
            raise NotExpressible(
                f"{field}.{name} looks secret; such values are written to {app_label} only as environment references"
            )
        if refs is not None and refs.anywhere.search(value):
            raise NotExpressible(f"{field}.{name} holds text {app_label} would expand as a variable reference")
    return dict(values)


def require_no_tool_filters(config: McpServerConfig, app_label: str) -> None:
    """Dropping a tool filter would expose tools the user turned off, so such a server is not written."""
    if config.enabled_tools is not None or config.disabled_tools:
        raise NotExpressible(f"{app_label} has no per-server tool filter for enabledTools/disabledTools")


def check_oauth(config: McpServerConfig, app_label: str, warnings: list[str], *, scopes_supported: bool) -> None:
    if not isinstance(config, HttpServerConfig) or config.oauth is None:
        return
    if config.oauth.allowed_origins:
        raise NotExpressible(f"{app_label} cannot restrict OAuth to oauth.allowedOrigins")
    if config.oauth.client_id is not None or config.oauth.grant is not None:
        raise NotExpressible(f"{app_label} cannot take a pre-registered or machine OAuth client from the environment")
    if config.oauth.scopes and not scopes_supported:
        warnings.append(f"oauth.scopes are not written: {app_label} negotiates OAuth scopes itself")


def stdio_env(config: StdioServerConfig, refs: RefSyntax | None, app_label: str) -> dict[str, str]:
    """``envVars`` as the app's references plus literal ``env`` (which wins, as it does when we spawn)."""
    if config.env_vars and refs is None:
        raise NotExpressible(f"{app_label} cannot pass environment variables by reference (envVars)")
    passed = {name: refs.format(name) for name in config.env_vars} if refs is not None else {}
    return passed | literal_values(config.env, "env", refs, app_label)


def http_headers(config: HttpServerConfig, refs: RefSyntax | None, app_label: str) -> dict[str, str]:
    """Literal ``headers`` plus ``envHeaders``/``bearerTokenEnvVar`` as the app's references."""
    if (config.env_headers or config.bearer_token_env_var) and refs is None:
        raise NotExpressible(f"{app_label} cannot take header values from environment variables")
    headers = literal_values(config.headers, "headers", refs, app_label)
    if refs is not None:
        headers |= {name: refs.format(variable) for name, variable in config.env_headers.items()}
        if config.bearer_token_env_var:
            headers["Authorization"] = f"Bearer {refs.format(config.bearer_token_env_var)}"
    return headers


def write_json_entry(
    config: McpServerConfig, warnings: list[str], *, label: str, refs: RefSyntax, with_type: bool, with_cwd: bool
) -> dict[str, Any]:
    """The ``{type?, command, args, env, cwd?}`` / ``{type?, url, headers}`` entry of Claude Code, Cursor, VS Code."""
    require_no_tool_filters(config, label)
    entry: dict[str, Any]
    if isinstance(config, StdioServerConfig):
        if config.cwd is not None and not with_cwd:
            raise NotExpressible(f"{label} has no working-directory (cwd) setting")
        entry = {"type": "stdio"} if with_type else {}
        entry |= {"command": config.command, "args": list(config.args)}
        env = stdio_env(config, refs, label)
        if env:
            entry["env"] = env
        if config.cwd is not None:
            entry["cwd"] = config.cwd
        return entry
    check_oauth(config, label, warnings, scopes_supported=False)
    entry = {"type": "http"} if with_type else {}
    entry["url"] = config.url
    headers = http_headers(config, refs, label)
    if headers:
        entry["headers"] = headers
    return entry


# --- locations ----------------------------------------------------------------------------------------


def config_home(home: Path, env: Mapping[str, str], platform: str) -> Path:
    """Where desktop apps keep per-user settings on this platform (XDG on Linux)."""
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform == "win32":
        appdata = env.get("APPDATA")
        return Path(appdata) if appdata else home / "AppData" / "Roaming"
    xdg = env.get("XDG_CONFIG_HOME")
    return Path(xdg) if xdg and os.path.isabs(xdg) else home / ".config"
