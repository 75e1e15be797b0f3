"""Fail-closed rules around the SDK's OAuth client: allowed origins, redirects, error text, SDK logging.

The SDK does the OAuth; this module decides which endpoints it may talk to and turns its failures into typed
errors that never copy its exception texts, which can quote state values and token-endpoint bodies.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from urllib.parse import urlsplit

from mcp_runtime.config.rules import check_url
from protocol.jsonrpc import AppError

_DEFAULT_PORTS = {"http": 80, "https": 443}
_SDK_AUTH_LOGGERS = ("mcp.client.auth.oauth2", "mcp.client.auth.utils", "mcp.client.auth")


def join_scopes(scopes: Iterable[str] | None) -> str | None:
    """Scopes as the one space-separated ``scope`` parameter (RFC 6749 §3.3); None for none."""
    joined = " ".join(scopes or ())
    return joined or None


def origin_of(url: str) -> str:
    """``scheme://host:port`` with the default port spelled out, for exact comparison."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or _DEFAULT_PORTS.get(scheme, 0)
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


class OriginPolicy:
    """Every OAuth endpoint must be https (or loopback http), on the MCP URL's own origin or on one listed in
    ``oauth.allowedOrigins`` (absent = none listed), and is never followed through a redirect.

    A refusal names the origin (``originNotAllowed``, ``data.origin``): the host asks the user and adds it with
    ``mcpServer/update`` (consent), then retries. It is raised before any request is sent there.
    """

    def __init__(self, server_url: str, allowed_origins: Iterable[str] | None) -> None:
        self.allowed = frozenset({origin_of(server_url), *(origin_of(o) for o in allowed_origins or ())})

    def check(self, url: str, what: str) -> None:
        check_url(url, field=what)
        found = origin_of(url)
        if found not in self.allowed:
            raise AppError(
                "originNotAllowed",
                f"the {what} is on {found}, which is neither the server's origin nor listed in oauth.allowedOrigins",
                origin=found,
            )


def redirect_rejected(status: int) -> AppError:
    return AppError("redirectRejected", f"an OAuth endpoint answered with a redirect ({status}); redirects are refused")


def sdk_failure(exc: Exception) -> AppError:
    """A typed error for an exception out of the SDK's OAuth flow, without quoting it."""
    import httpx2
    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError

    if isinstance(exc, AppError):
        return exc
    if isinstance(exc, httpx2.TimeoutException):
        return AppError("oauthFailed", "an OAuth endpoint did not answer in time", step="network")
    if isinstance(exc, httpx2.HTTPError):
        return AppError("oauthFailed", "an OAuth endpoint could not be reached", step="network")
    if isinstance(exc, OAuthRegistrationError):
        return AppError("oauthFailed", "dynamic client registration failed", step="registration")
    if isinstance(exc, OAuthTokenError):
        return AppError("oauthFailed", "the token endpoint refused the exchange", step="token")
    if isinstance(exc, OAuthFlowError):
        text = str(exc)
        known = (
            ("Authorization server metadata issuer mismatch", "the authorization server metadata names another issuer"),
            ("Authorization response iss mismatch", "the authorization response names another issuer"),
            ("Authorization response missing iss", "the authorization response does not name its issuer"),
            ("State parameter mismatch", "the authorization response carried the wrong state"),
            ("Protected resource", "the protected resource metadata names another resource"),
        )
        for prefix, message in known:
            if text.startswith(prefix):
                return AppError("oauthFailed", message, step="flow")
        return AppError("oauthFailed", "the OAuth flow failed", step="flow")
    return AppError("oauthFailed", "the OAuth flow failed unexpectedly", step="internal")


def silence_sdk_auth_logging() -> None:
    """The SDK logs OAuth failures with their text (state values, token-endpoint bodies): drop those records.

    Our own log lines report every outcome with a typed reason instead.
    """
    for name in _SDK_AUTH_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropAll) for f in logger.filters):
            logger.addFilter(_DropAll())


class _DropAll(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False
