"""The auth both owners need for a server: the HTTP auth to connect with, and the ``authStatus`` of its row."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_runtime import oauth
from protocol.config import HttpServerConfig, McpServerConfig
from protocol.jsonrpc import AppError
from protocol.status import AuthStatus

if TYPE_CHECKING:
    import httpx2


def connection_auth(name: str, config: McpServerConfig, data_dir: Path) -> httpx2.Auth | None:
    """The HTTP auth for a session, or None; an OAuth server not logged in fails closed here.

    Starting it would only learn the same from a 401 a round trip later, and a start never begins a login.
    """
    if not isinstance(config, HttpServerConfig):
        return None
    if config.oauth is not None and oauth.auth_status(name, config.url, config, data_dir) == "notLoggedIn":
        raise AppError("authRequired", f"server {name} needs an OAuth login (mcpServer/oauth/login)", server=name)
    return oauth.oauth_auth(name, config.url, config, data_dir)


def auth_status(name: str, config: McpServerConfig, data_dir: Path) -> AuthStatus:
    if not isinstance(config, HttpServerConfig):
        return "unsupported"
    return oauth.auth_status(name, config.url, config, data_dir)


def watch_login(auth: httpx2.Auth | None, lost: Callable[[AppError], None]) -> None:
    """Have ``lost`` (a session's bound ``lose``) called when the server's stored login stops working for every
    connection, so each owner's row says so at once, not after its own next request."""
    if auth is not None:
        from mcp_runtime.oauth.runtime import watch

        watch(auth, lost)
