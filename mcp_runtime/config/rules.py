"""What a valid server config is: shape, names, header/URL/env policy (SPEC §5).

The one place deciding validity (SPEC §5): ``mcpServer/create``, ``update``, ``thread/start`` and
the importers all call :func:`parse_server_config`, so an entry is never accepted half-valid.
"""

from __future__ import annotations

import ipaddress
import os
import re
from typing import Any
from urllib.parse import urlsplit

from pydantic import TypeAdapter, ValidationError

from mcp_runtime.secrets.store import secret_store
from protocol.config import HttpServerConfig, McpServerConfig, OAuthSettings, StdioServerConfig
from protocol.jsonrpc import AppError, validation_errors
from protocol.secrets import is_secret_name
from protocol.tool_names import SERVER_NAME_PATTERN, TOOL_SEPARATOR

CONFIG_ADAPTER = TypeAdapter(McpServerConfig)
_NAME = re.compile(SERVER_NAME_PATTERN)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HTTP_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
LOADER_VARIABLES = frozenset({"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT"})
"""Variables the dynamic loader reads (plus every ``DYLD_*``): a config setting one chooses code every process
it starts would load, a sandbox wrapper included."""
RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "accept",
        "connection",
        "transfer-encoding",
        "upgrade",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
    }
)


def check_server_name(name: str) -> None:
    if not _NAME.fullmatch(name) or TOOL_SEPARATOR in name:
        raise AppError(
            "invalidServerName",
            "server names are 1-24 characters of [A-Za-z0-9_-] and never contain '__'",
            name=name[:64],
        )


def is_sensitive_header(name: str) -> bool:
    """A header that may carry a secret only by environment reference (``protocol.secrets``' one rule)."""
    return is_secret_name(name)


def _check_header_name(name: str) -> None:
    if not _HTTP_TOKEN.fullmatch(name):
        raise AppError("invalidHeader", "header name is not an HTTP token", header=name[:64])
    if name.lower() in RESERVED_HEADERS:
        raise AppError("reservedHeader", f"header {name} is reserved by the protocol", header=name)


def _check_env_name(name: str, field: str) -> None:
    if not _ENV_NAME.fullmatch(name):
        raise AppError(
            "invalidParams",
            "not a valid environment variable name",
            errors=[{"path": field, "message": "not a valid environment variable name"}],
        )


def is_loopback_host(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str, *, field: str = "url") -> None:
    """HTTPS only, or plain HTTP to loopback; no userinfo and no fragment."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises on an invalid port
    except ValueError as exc:
        raise AppError("insecureUrl", f"{field} is not a valid URL", field=field) from exc
    if parts.scheme not in ("https", "http") or not host:
        raise AppError("insecureUrl", f"{field} must be an https URL", field=field)
    if parts.scheme == "http" and not is_loopback_host(host):
        raise AppError("insecureUrl", f"{field} may use http only for loopback hosts", field=field)
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise AppError("insecureUrl", f"{field} must not carry userinfo", field=field)
    if parts.fragment or "#" in url:
        raise AppError("insecureUrl", f"{field} must not carry a fragment", field=field)


def _check_http(config: HttpServerConfig) -> None:
    check_url(config.url)
    seen: set[str] = set()
    for name, value in config.headers.items():
        _check_header_name(name)
        if any(ch in value for ch in "\r\n\0"):
            raise AppError("invalidHeader", "header value contains CR, LF or NUL", header=name)
        if is_sensitive_header(name) and not _keychain():
            raise AppError(
                "inlineSecret",
                f"header {name} looks secret: use envHeaders or bearerTokenEnvVar instead of a literal",
                header=name,
            )
        seen.add(name.lower())
    for name, variable in config.env_headers.items():
        _check_header_name(name)
        if name.lower() in seen:
            raise AppError("invalidHeader", f"header {name} is set twice", header=name)
        _check_env_name(variable, f"config.envHeaders.{name}")
        seen.add(name.lower())
    if config.bearer_token_env_var is not None:
        _check_env_name(config.bearer_token_env_var, "config.bearerTokenEnvVar")
        if "authorization" in seen:
            raise AppError("invalidHeader", "Authorization is set twice", header="Authorization")
    if config.oauth is not None:
        if config.headers or config.env_headers or config.bearer_token_env_var:
            raise AppError(
                "oauthHeaderConflict", "oauth cannot be combined with headers, envHeaders or bearerTokenEnvVar"
            )
        _check_oauth(config.oauth)


def _keychain() -> bool:
    """Literal secrets are accepted only where the OS keychain keeps them (SPEC §14), never in a plain file."""
    return secret_store().kind == "keychain"


MACHINE_GRANTS = frozenset({"clientCredentials", "identityAssertion", "jwtBearer"})
"""Grants without a user's browser login: a token is fetched when connecting, from ``expectedIssuer`` only."""


def _check_oauth(oauth: OAuthSettings) -> None:
    """Secrets by environment reference (or a file the host keeps), or as values kept in the OS keychain; each grant
    names what it needs."""
    if oauth.client_secret is not None and not _keychain():
        raise AppError("inlineSecret", "oauth.clientSecret must not be inline: use oauth.clientSecretEnvVar")
    if oauth.private_key is not None and not _keychain():
        raise AppError("inlineSecret", "oauth.privateKey must not be inline: use oauth.privateKeyEnvVar")
    if oauth.idp is not None and oauth.idp.client_secret is not None and not _keychain():
        raise AppError("inlineSecret", "oauth.idp.clientSecret must not be inline: use oauth.idp.clientSecretEnvVar")
    if oauth.resource is not None:
        raise AppError("unsupported", "oauth.resource is not supported")
    for origin in oauth.allowed_origins or []:
        check_url(origin, field="oauth.allowedOrigins")
    if oauth.client_metadata_url is not None:
        check_client_metadata_url(oauth.client_metadata_url, field="oauth.clientMetadataUrl")
        if oauth.client_id is not None or oauth.grant in MACHINE_GRANTS:
            _oauth_only("clientMetadataUrl", "a client that registers itself (no clientId, no machine grant)")
    if oauth.client_secret_env_var is not None:
        _check_env_name(oauth.client_secret_env_var, "config.oauth.clientSecretEnvVar")
        if oauth.client_id is None:
            _oauth_missing("clientId", "oauth.clientSecretEnvVar needs oauth.clientId")
    if oauth.client_secret is not None:
        if oauth.client_secret_env_var is not None:
            _oauth_only("clientSecret", "a client without clientSecretEnvVar (one place for the secret)")
        if oauth.client_id is None:
            _oauth_missing("clientId", "oauth.clientSecret needs oauth.clientId")
    if oauth.private_key is not None and oauth.private_key_env_var is not None:
        _oauth_only("privateKey", "a client without privateKeyEnvVar (one place for the key)")
    if oauth.private_key_env_var is not None:
        _check_env_name(oauth.private_key_env_var, "config.oauth.privateKeyEnvVar")
    if oauth.private_key_env_var is not None or oauth.private_key is not None:
        if oauth.grant != "clientCredentials":
            _oauth_only("privateKeyEnvVar", "grant clientCredentials")
        if oauth.client_secret_env_var is not None or oauth.client_secret is not None:
            _oauth_only("privateKeyEnvVar", "a client without clientSecretEnvVar (one way to authenticate)")
    elif oauth.signing_algorithm is not None:
        _oauth_only("signingAlgorithm", "privateKeyEnvVar")
    if oauth.grant in MACHINE_GRANTS:
        if oauth.callback_port is not None:
            _oauth_only("callbackPort", "a client that logs in (not a machine grant)")
        if oauth.expected_issuer is None:
            _oauth_missing("expectedIssuer", f"the {oauth.grant} grant needs oauth.expectedIssuer")
    elif oauth.expected_issuer is not None:
        _oauth_only("expectedIssuer", "grants clientCredentials, identityAssertion and jwtBearer")
    if oauth.expected_issuer is not None:
        check_url(oauth.expected_issuer, field="oauth.expectedIssuer")
    if oauth.grant == "clientCredentials":
        if oauth.client_id is None:
            _oauth_missing("clientId", "the clientCredentials grant needs oauth.clientId")
        secrets = (oauth.client_secret_env_var, oauth.private_key_env_var, oauth.client_secret, oauth.private_key)
        if all(secret is None for secret in secrets):
            _oauth_missing(
                "clientSecretEnvVar", "the clientCredentials grant needs oauth.clientSecretEnvVar or privateKeyEnvVar"
            )
    _check_identity_assertion(oauth)
    _check_jwt_bearer(oauth)


def _check_identity_assertion(oauth: OAuthSettings) -> None:
    """SEP-990: a confidential client at the authorization server, and the IdP that exchanges the user's ID token."""
    if oauth.grant != "identityAssertion":
        if oauth.idp is not None:
            _oauth_only("idp", "grant identityAssertion")
        return
    for field_name, value in (
        ("clientId", oauth.client_id),
        ("clientSecretEnvVar", oauth.client_secret_env_var or oauth.client_secret),
        ("idp", oauth.idp),
    ):
        if value is None:
            _oauth_missing(field_name, f"the identityAssertion grant needs oauth.{field_name}")
    idp = oauth.idp
    assert idp is not None
    check_url(idp.token_endpoint, field="oauth.idp.tokenEndpoint")
    if idp.client_secret_env_var is not None:
        _check_env_name(idp.client_secret_env_var, "config.oauth.idp.clientSecretEnvVar")
        if idp.client_secret is not None:
            _oauth_only("idp.clientSecret", "an IdP client without idp.clientSecretEnvVar (one place for the secret)")
    _check_one_source(idp.id_token_file, idp.id_token_env_var, "idp.idTokenFile", "idp.idTokenEnvVar")


def _check_jwt_bearer(oauth: OAuthSettings) -> None:
    """SEP-1933: the workload's JWT is the whole credential (no client secret, no key, no registration)."""
    if oauth.grant != "jwtBearer":
        kept = (("assertionFile", oauth.assertion_file), ("assertionEnvVar", oauth.assertion_env_var))
        for field_name, value in kept:
            if value is not None:
                _oauth_only(field_name, "grant jwtBearer")
        return
    if oauth.client_secret_env_var is not None or oauth.client_secret is not None:
        _oauth_only("clientSecretEnvVar", "a client that authenticates (jwtBearer sends no client authentication)")
    _check_one_source(oauth.assertion_file, oauth.assertion_env_var, "assertionFile", "assertionEnvVar")


def _check_one_source(path: str | None, variable: str | None, file_field: str, env_field: str) -> None:
    """A credential the host keeps comes from exactly one place: an absolute file path or a variable."""
    if (path is None) == (variable is None):
        message = f"exactly one of oauth.{file_field} and oauth.{env_field} is needed"
        raise AppError("invalidParams", message, errors=[{"path": f"config.oauth.{file_field}", "message": message}])
    if variable is not None:
        _check_env_name(variable, f"config.oauth.{env_field}")
    if path is not None and (not os.path.isabs(path) or "\0" in path):
        message = "must be an absolute path"
        errors = [{"path": f"config.oauth.{file_field}", "message": message}]
        raise AppError("invalidParams", f"oauth.{file_field} {message}", errors=errors)


def check_client_metadata_url(url: str, *, field: str) -> None:
    """A client ID metadata document is an https URL with a path (the authorization server fetches it)."""
    check_url(url, field=field)
    parts = urlsplit(url)
    if parts.scheme != "https" or parts.path in ("", "/"):
        raise AppError("insecureUrl", f"{field} must be an https URL with a path", field=field)


def _oauth_only(field_name: str, what: str) -> None:
    message = f"oauth.{field_name} applies to {what} only"
    raise AppError("invalidParams", message, errors=[{"path": f"config.oauth.{field_name}", "message": message}])


def _oauth_missing(field_name: str, message: str) -> None:
    raise AppError("invalidParams", message, errors=[{"path": f"config.oauth.{field_name}", "message": message}])


def _check_stdio(config: StdioServerConfig) -> None:
    for index, variable in enumerate(config.env_vars):
        _check_env_name(variable, f"config.envVars.{index}")
    for variable in config.env:
        _check_env_name(variable, f"config.env.{variable}")
        if variable in LOADER_VARIABLES or variable.startswith("DYLD_"):
            raise AppError(
                "unsafeEnv",
                f"env.{variable} is read by the dynamic loader and is never set from a config",
                variable=variable,
            )
    parts = [("config.command", config.command), *((f"config.args.{i}", arg) for i, arg in enumerate(config.args))]
    if nul := [{"path": path, "message": "must not contain NUL"} for path, part in parts if "\0" in part]:
        raise AppError("invalidParams", "command and args must not contain NUL", errors=nul)
    if config.cwd is not None and not config.cwd.startswith("/"):
        raise AppError(
            "invalidParams", "cwd must be absolute", errors=[{"path": "config.cwd", "message": "must be absolute"}]
        )


def check_policy(config: McpServerConfig) -> None:
    """Raise the typed policy error of SPEC §5 for the first rule the config breaks."""
    if isinstance(config, HttpServerConfig):
        _check_http(config)
    else:
        _check_stdio(config)


def parse_server_config(name: str, raw: Any, *, path: tuple[str | int, ...] = ("config",)) -> McpServerConfig:
    """Validate an untrusted config (wire, file or import) into a typed, policy-checked one."""
    check_server_name(name)
    try:
        config = CONFIG_ADAPTER.validate_python(raw)
    except ValidationError as exc:
        raise AppError("invalidParams", "invalid server config", errors=validation_errors(exc, path)) from exc
    check_policy(config)
    return config


def check_server(name: str, config: McpServerConfig) -> None:
    """Name and policy checks for a config that already has the right shape (parsed from the wire)."""
    check_server_name(name)
    check_policy(config)
