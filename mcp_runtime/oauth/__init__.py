"""OAuth for HTTP MCP servers: interactive login, stored credentials, runtime auth (SPEC §6).

Light to import (no MCP SDK): the SDK is imported when a login starts or a runtime provider is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_runtime.config.rules import MACHINE_GRANTS, is_sensitive_header
from mcp_runtime.oauth.credentials import CredentialStore, StoredTokenStorage
from mcp_runtime.oauth.login import DEFAULT_TIMEOUT_S, LoginDone, LoginStarted, OAuthLogins
from protocol.config import HttpServerConfig, McpServerConfig, OAuthSettings
from protocol.jsonrpc import AppError
from protocol.status import AuthStatus

if TYPE_CHECKING:
    import httpx2

    from mcp_runtime.config.policy import ConfigPolicy

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "AuthStatus",
    "CredentialStore",
    "LoginDone",
    "LoginStarted",
    "OAuthLogins",
    "StoredTokenStorage",
    "auth_status",
    "client_metadata_url",
    "connection_auth",
    "login_client",
    "logs_in",
    "needs_login",
    "oauth_auth",
    "step_up_scopes",
]


LOGIN_REASONS = frozenset({"authRequired", "reauthenticationRequired"})


def needs_login(reason: str | None) -> bool:
    """Whether a failure with this reason is one only the user can fix, by logging in: the server wants a
    credential and there is none, or the stored one can no longer be refreshed.

    The one place that decides it: a start's ``failureReason``, a status row's ``authenticationRequired``, a
    session ended by its request and a thread that does not reconnect on demand all ask here.
    """
    return reason in LOGIN_REASONS


def logs_in(config: McpServerConfig) -> bool:
    """Whether only a user's login (``mcpServer/oauth/login``) can give this server a new credential: false for a
    machine grant, whose credential the daemon fetches itself (from what the host keeps current, for the assertion
    grants), so a connection lost for want of one may be tried again on demand."""
    return not (isinstance(config, HttpServerConfig) and config.oauth is not None
                and config.oauth.grant in MACHINE_GRANTS)


def _static_auth(config: HttpServerConfig) -> bool:
    """Whether the config authenticates with a header of its own (then OAuth stays out of the way)."""
    return config.bearer_token_env_var is not None or any(is_sensitive_header(h) for h in config.env_headers)


def connection_auth(name: str, config: McpServerConfig, data_dir: Path, env: Mapping[str, str]) -> httpx2.Auth | None:
    """The one entry the owners call: the HTTP auth for a session, or None; an OAuth server not logged in fails
    closed here (starting it would only learn the same from a 401 a round trip later, and a start never begins a
    login). ``env`` is the daemon's environment, where every secret a config names by variable is read."""
    if not isinstance(config, HttpServerConfig):
        return None
    if config.oauth is not None and auth_status(name, config.url, config, data_dir) == "notLoggedIn":
        if CredentialStore(data_dir).login_lost(name, config.url):
            raise AppError(
                "reauthenticationRequired",
                f"server {name}'s stored OAuth login stopped working; log in again (mcpServer/oauth/login)",
                server=name,
            )
        raise AppError("authRequired", f"server {name} needs an OAuth login (mcpServer/oauth/login)", server=name)
    return oauth_auth(name, config.url, config, data_dir, env)


def oauth_auth(
    name: str, url: str, config: McpServerConfig, data_dir: Path, env: Mapping[str, str]
) -> httpx2.Auth | None:
    """The runtime ``httpx2.Auth`` for a connection, or None when OAuth does not apply (no ``oauth`` block and no
    stored credentials for exactly (name, url), or a static auth header).

    Every connection to (name, url) shares one auth object, which refreshes but never starts a login: a request
    that needs one fails typed. Raises ``missingEnvVar`` when the client secret's variable is unset.
    """
    if not isinstance(config, HttpServerConfig) or _static_auth(config):
        return None
    if config.oauth is None and not CredentialStore(data_dir).has_tokens(name, url):
        return None
    from mcp_runtime.oauth.runtime import shared_auth

    return shared_auth(name, url, config.oauth, data_dir, env, timeout_s=config.startup_timeout_ms / 1000)


def login_client(settings: OAuthSettings, env: Mapping[str, str]) -> Any:
    """The pre-registered client a login uses (``OAuthClientInformationFull``), or None for dynamic registration.

    Raises ``unsupported`` for a machine grant (it never logs in through a browser) and ``missingEnvVar`` when
    ``clientSecretEnvVar`` names an unset variable.
    """
    if settings.grant in MACHINE_GRANTS:
        raise AppError(
            "unsupported",
            f"grant {settings.grant} authenticates without a browser login: the token is fetched when connecting",
        )
    if settings.client_id is None:
        return None
    from mcp_runtime.oauth.flow import client_secret, pre_registered_client

    return pre_registered_client(settings, client_secret(settings, env), None)


def client_metadata_url(settings: OAuthSettings, policy: ConfigPolicy) -> str | None:
    """The client ID metadata document a login offers: the server's own, else the deployment's default (none for
    a pre-registered client, which has its id already)."""
    if settings.client_id is not None:
        return None
    return settings.client_metadata_url or policy.oauth_client_metadata_url


def step_up_scopes(data_dir: Path, name: str, url: str) -> list[str] | None:
    """Scopes for a login that names none: the last challenge's with the previous login's, or None (blocking)."""
    return CredentialStore(data_dir).step_up_scopes(name, url)


def auth_status(name: str, url: str, config: McpServerConfig, data_dir: Path) -> AuthStatus:
    """``authStatus`` of SPEC §6 from the config and the credential store (no network)."""
    if not isinstance(config, HttpServerConfig):
        return "unsupported"
    if _static_auth(config):
        return "bearerToken"
    if config.oauth is not None and config.oauth.grant in MACHINE_GRANTS:
        return "oAuth"  # a machine grant: no login, a token is fetched when connecting
    if CredentialStore(data_dir).has_tokens(name, url):
        return "oAuth"
    if config.oauth is not None:
        return "notLoggedIn"
    return "unknown"
