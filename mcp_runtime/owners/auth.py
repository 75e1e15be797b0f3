"""The auth both owners need for a server: the HTTP auth to connect with (``oauth.connection_auth``, the one entry),
the ``authStatus`` of its row, and who is told when its login is lost."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_runtime import oauth
from mcp_runtime.oauth import connection_auth
from protocol.config import HttpServerConfig, McpServerConfig
from protocol.jsonrpc import AppError

__all__ = ["auth_status", "connection_auth", "watch_login"]
from protocol.status import AuthStatus

if TYPE_CHECKING:
    import httpx2


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
