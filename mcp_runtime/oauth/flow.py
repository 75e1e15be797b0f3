"""What the OAuth flows share besides the auth object: the configured client and its secret (read from the
environment the daemon was given), the RFC 8707 resource check, and the typed refusal a flow answers with in
place of a response (a failure is never raised from a flow: it would end the SDK transport's POST writer).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import httpx2
from mcp.client.auth import OAuthFlowError
from mcp.shared.auth import OAuthClientInformationFull, ProtectedResourceMetadata
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url

from mcp_runtime import _sdk_compat
from mcp_runtime.config.policy import policy
from mcp_runtime.session.refusal import refusal_body
from protocol.config import OAuthSettings
from protocol.jsonrpc import AppError

LoginLost = Callable[[AppError], None]
"""Told when the stored login of a server stops working for every connection (a refused refresh, a changed
authorization server): each connection's session ends with that typed error."""


def env_value(variable: str, field_name: str, env: Mapping[str, str]) -> str:
    """A secret the config names by variable; ``missingEnvVar`` when the variable is unset or empty."""
    policy().check_env(variable, f"oauth.{field_name}")
    value = env.get(variable)
    if not value:
        raise AppError(
            "missingEnvVar", f"environment variable {variable} (oauth.{field_name}) is not set", variable=variable
        )
    return value


def client_secret(settings: OAuthSettings | None, env: Mapping[str, str]) -> str | None:
    """The client's secret (or PEM private key): the value the OS keychain keeps (``settings`` revealed, SPEC §14),
    else from the environment (``missingEnvVar`` when the variable is unset)."""
    if settings is None:
        return None
    if settings.client_secret is not None or settings.private_key is not None:
        return settings.client_secret or settings.private_key
    for variable, field_name in (
        (settings.client_secret_env_var, "clientSecretEnvVar"),
        (settings.private_key_env_var, "privateKeyEnvVar"),
    ):
        if variable is not None:
            return env_value(variable, field_name, env)
    return None


def pre_registered_client(settings: OAuthSettings, secret: str | None, stored: dict[str, Any] | None) -> Any:
    """The configured client id (and secret) over what the store remembers (auth method, issuer)."""
    method = "none" if secret is None else "client_secret_basic"
    info: dict[str, Any] = {"token_endpoint_auth_method": method, **(stored or {}), "client_id": settings.client_id}
    info.pop("client_secret", None)  # only ever the configured one
    if secret is not None:
        info["client_secret"] = secret
    return OAuthClientInformationFull.model_validate({**info, "redirect_uris": None})


def check_resource(server_url: str, prm: ProtectedResourceMetadata) -> None:
    """RFC 8707: the protected resource metadata must describe this server (or a parent of its URL)."""
    if prm.resource is None:
        return
    expected = resource_url_from_server_url(server_url)
    if not check_resource_allowed(requested_resource=expected, configured_resource=str(prm.resource)):
        raise OAuthFlowError(f"Protected resource {prm.resource} does not match expected {expected}")


async def refuse(response: httpx2.Response, error: AppError) -> None:
    """Turn ``response`` into the transport's synthetic JSON-RPC error for ``error`` (same shape, same marker)."""
    body = refusal_body(error)
    original = response.stream
    response.status_code = 400
    response.headers = httpx2.Headers({"content-type": "application/json", "content-length": str(len(body))})
    response.stream = httpx2.ByteStream(body)
    _sdk_compat.replace_read_body(response, body)
    if isinstance(original, httpx2.AsyncByteStream):
        await original.aclose()
