"""OAuth for HTTP MCP servers: interactive login, stored credentials, runtime auth (SPEC §6).

Light to import (no MCP SDK): the SDK is imported when a login starts or a runtime provider is built.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mcp_runtime.config import is_sensitive_header
from mcp_runtime.oauth.credentials import CredentialStore, StoredTokenStorage
from mcp_runtime.oauth.login import DEFAULT_TIMEOUT_S, LoginDone, LoginStarted, OAuthLogins
from protocol.config import HttpServerConfig, McpServerConfig
from protocol.server import AuthStatus

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "AuthStatus",
    "CredentialStore",
    "LoginDone",
    "LoginStarted",
    "OAuthLogins",
    "StoredTokenStorage",
    "auth_status",
    "oauth_auth",
]


def _static_auth(config: HttpServerConfig) -> bool:
    """Whether the config authenticates with a header of its own (then OAuth stays out of the way)."""
    return config.bearer_token_env_var is not None or any(is_sensitive_header(h) for h in config.env_headers)


def oauth_auth(name: str, url: str, config: McpServerConfig, data_dir: Path) -> httpx2.Auth | None:
    """The runtime ``httpx2.Auth`` for a connection, or None when OAuth does not apply.

    It applies to an HTTP server with an ``oauth`` block or with stored credentials for exactly (name, url),
    unless the config authenticates with a static header. It reuses the stored tokens and registration,
    refreshes, and never starts a login: a request that needs one fails with ``authRequired`` or
    ``reauthenticationRequired`` (``insufficientScope`` for a 403 ``insufficient_scope``).
    """
    if not isinstance(config, HttpServerConfig) or _static_auth(config):
        return None
    store = CredentialStore(data_dir)
    if config.oauth is None and not store.has_tokens(name, url):
        return None
    from mcp_runtime.oauth.runtime import RuntimeOAuth

    allowed = config.oauth.allowed_origins if config.oauth is not None else None
    return RuntimeOAuth(name, url, store, allowed)


def auth_status(name: str, url: str, config: McpServerConfig, data_dir: Path) -> AuthStatus:
    """``authStatus`` of SPEC §6 from the config and the credential store (no network)."""
    if not isinstance(config, HttpServerConfig):
        return "unsupported"
    if _static_auth(config):
        return "bearerToken"
    if CredentialStore(data_dir).has_tokens(name, url):
        return "oAuth"
    if config.oauth is not None:
        return "notLoggedIn"
    return "unknown"
