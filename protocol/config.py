"""``McpServerConfig``: one shape on the wire and in ``mcps.json`` (SPEC §5).

The model checks shape and ranges only; policy (headers, URLs, names) lives in
``mcp_runtime.config`` so that there is one place deciding what a valid server is.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, ValidationError, ValidatorFunctionWrapHandler, WrapValidator
from pydantic_core import InitErrorDetails, PydanticCustomError
from typing_extensions import TypeAliasType

from protocol.base import WireModel
from protocol.constants import TRANSPORTS

ToolLoading = Literal["eager", "deferred", "auto"]
ProtocolMode = Literal["auto", "2026-07-28", "2025-11-25"]
OAuthGrant = Literal["authorizationCode", "clientCredentials", "identityAssertion", "jwtBearer"]
DPoPMode = Literal["auto", "required", "never"]
SigningAlgorithm = Literal["RS256", "ES256"]
AppName = Literal["claude", "claudeDesktop", "codex", "gemini", "cursor", "vscode"]
APP_NAMES: tuple[AppName, ...] = ("claude", "claudeDesktop", "codex", "gemini", "cursor", "vscode")


class AppTargets(WireModel):
    """Which external apps ``mcpServer/syncAllToLive`` writes this server into."""

    claude: bool | None = Field(default=None, description="Claude Code.")
    claude_desktop: bool | None = Field(default=None, description="Claude Desktop.")
    codex: bool | None = Field(default=None, description="Codex.")
    gemini: bool | None = Field(default=None, description="Gemini CLI.")
    cursor: bool | None = Field(default=None, description="Cursor.")
    vscode: bool | None = Field(default=None, description="VS Code.")

    @staticmethod
    def field_of(app: AppName) -> str:
        """The model field holding ``app``'s switch (``claudeDesktop`` -> ``claude_desktop``)."""
        return "claude_desktop" if app == "claudeDesktop" else app

    def targets(self, app: AppName) -> bool:
        return bool(getattr(self, self.field_of(app)))


class IdentityProviderSettings(WireModel):
    """The enterprise identity provider of ``grant: identityAssertion``: where the user's ID token is exchanged for
    an ID-JAG (RFC 8693), and where the host's single sign-on keeps that ID token (a file or a variable)."""

    token_endpoint: str = Field(description="The IdP's token endpoint (RFC 8693 token exchange).")
    client_id: str = Field(min_length=1, max_length=1024, description="This app's client id at the IdP.")
    client_secret_env_var: str | None = Field(
        default=None, description="The environment variable holding this app's client secret at the IdP."
    )
    client_secret: str | None = Field(
        default=None,
        description="The client secret as a value: kept in the OS keychain (read back as `\"***\"`); refused with "
        "`inlineSecret` while the secret store is the file store (use `clientSecretEnvVar`).",
    )
    id_token_file: str | None = Field(
        default=None,
        description="Absolute path of the file the host's single sign-on keeps the user's ID token in (read for "
        "each exchange).",
    )
    id_token_env_var: str | None = Field(
        default=None, description="The environment variable holding the user's ID token (instead of a file)."
    )


class OAuthSettings(WireModel):
    """OAuth options: scopes, trusted origins, the login's callback port, a client ID metadata document,
    a pre-registered or machine client, sender-constrained tokens, enterprise and workload identities.

    Secrets come from the environment (``clientSecretEnvVar``, ``privateKeyEnvVar``), from files the host keeps
    (``idp.idTokenFile``, ``assertionFile``), or as values (``clientSecret``, ``privateKey``, ``idp.clientSecret``)
    kept in the OS keychain (``inlineSecret`` with the file store). ``resource`` is ``unsupported``.
    """

    scopes: list[str] | None = Field(default=None, description="Scopes to ask for at login.")
    allowed_origins: list[str] | None = Field(
        default=None, description="Origins besides the server's own that OAuth endpoints may be on (consent)."
    )
    grant: OAuthGrant | None = Field(
        default=None,
        description="`authorizationCode` (a user logs in; default), `clientCredentials` (no user), "
        "`identityAssertion` (the user's enterprise ID token, no browser) or `jwtBearer` (a workload's JWT).",
    )
    client_id: str | None = Field(
        default=None, min_length=1, max_length=1024, description="A pre-registered client's id (no registration)."
    )
    client_secret_env_var: str | None = Field(
        default=None, description="The environment variable holding the client secret."
    )
    client_secret: str | None = Field(
        default=None,
        description="The client secret as a value: kept in the OS keychain (read back as `\"***\"`); refused with "
        "`inlineSecret` while the secret store is the file store (use `clientSecretEnvVar`).",
    )
    private_key_env_var: str | None = Field(
        default=None,
        description="With `clientCredentials`: the environment variable holding the PEM private key "
        "(`private_key_jwt`).",
    )
    private_key: str | None = Field(
        default=None,
        description="The PEM private key as a value: kept in the OS keychain (read back as `\"***\"`); refused with "
        "`inlineSecret` while the secret store is the file store (use `privateKeyEnvVar`).",
    )
    signing_algorithm: SigningAlgorithm | None = Field(
        default=None, description="With `privateKeyEnvVar`: how the client assertion is signed (default `RS256`)."
    )
    expected_issuer: str | None = Field(
        default=None,
        description="With `clientCredentials`, `identityAssertion` or `jwtBearer`: the authorization server's issuer "
        "must be this.",
    )
    dpop: DPoPMode | None = Field(
        default=None,
        description="Sender-constrained tokens (DPoP): `auto` (default: when the server asks for them and its "
        "authorization server supports them), `required` or `never`.",
    )
    idp: IdentityProviderSettings | None = Field(
        default=None, description="With `identityAssertion`: the enterprise identity provider."
    )
    assertion_file: str | None = Field(
        default=None,
        description="With `jwtBearer`: absolute path of the file the platform keeps the workload's JWT in (read for "
        "each token request).",
    )
    assertion_env_var: str | None = Field(
        default=None, description="With `jwtBearer`: the environment variable holding the workload's JWT."
    )
    callback_port: int | None = Field(
        default=None,
        ge=1024,
        le=65535,
        strict=True,
        description="The login's loopback port: the redirect URI is `http://127.0.0.1:<port>/oauth/callback` "
        "(default: a free port).",
    )
    client_metadata_url: str | None = Field(
        default=None,
        description="An https Client ID Metadata Document used as the `client_id` where the authorization server "
        "supports it (default: the daemon's `--oauth-client-metadata-url`).",
    )
    resource: str | None = Field(default=None, description="Refused (`unsupported`).")


def _idle_timeout(value: Any, handler: ValidatorFunctionWrapHandler) -> int:
    timeout: int = handler(value)
    if 0 < timeout < MIN_IDLE_TIMEOUT_MS:
        raise PydanticCustomError("idle_timeout", "must be 0 (never) or at least {minimum}", {"minimum": 1000})
    return timeout


MIN_IDLE_TIMEOUT_MS = 1000
IdleTimeout = Annotated[int, Field(ge=0, le=86_400_000, strict=True), WrapValidator(_idle_timeout)]
"""``idleTimeoutMs``: 0 (never), or 1000 ms to a day."""


class CommonConfig(WireModel):
    """Fields shared by both transports."""

    enabled: bool = Field(default=True, description="Whether this daemon starts it and offers it to threads.")
    description: str | None = Field(default=None, max_length=4096, description="A note for people.")
    startup_timeout_ms: int = Field(
        default=30_000,
        ge=1,
        le=600_000,
        strict=True,
        description="How long connecting may take (and each OAuth request).",
    )
    tool_timeout_ms: int = Field(
        default=30_000, ge=1, le=300_000, strict=True, description="How long a tool call may take."
    )
    idle_timeout_ms: IdleTimeout = Field(
        default=600_000,
        description="How long a thread's connection may go unused before it sleeps (its server stops, its catalog "
        "is kept; the next call or read wakes it); `0` never.",
    )
    enabled_tools: list[str] | None = Field(default=None, description="Only these tools (raw or full names).")
    disabled_tools: list[str] | None = Field(
        default=None, description="Never these tools (applied after `enabledTools`)."
    )
    tool_loading: ToolLoading = Field(
        default="auto", description="`deferred` tools wait to be searched for; `auto` defers past 16 tools."
    )
    always_visible_tools: list[str] | None = Field(default=None, description="Tools listed even when deferred.")
    protocol: ProtocolMode = Field(default="auto", description="The MCP version to speak; `auto` negotiates.")
    apps: AppTargets | None = Field(default=None, description="The apps `mcpServer/syncAllToLive` writes it into.")


class StdioServerConfig(CommonConfig):
    """A server spawned as a child process speaking MCP on its stdio."""

    type: Literal["stdio"] = Field(default="stdio", description="`stdio`; may be omitted.")
    command: str = Field(min_length=1, description="The program to run (looked up on PATH).")
    args: list[str] = Field(default_factory=list, description="Its arguments.")
    env: dict[str, str] = Field(
        default_factory=dict, description="Variables to set for it; values read back as `\"***\"`."
    )
    env_vars: list[str] = Field(default_factory=list, description="Variables of the daemon's environment to pass on.")
    cwd: str | None = Field(default=None, description="Its working directory (absolute).")


class HttpServerConfig(CommonConfig):
    """A Streamable HTTP server."""

    type: Literal["http"] = Field(description="Always `http`.")
    url: str = Field(min_length=1, description="The MCP endpoint: `https`, or `http` to a loopback host.")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Headers to send; read back as `\"***\"`. A secret-named one is kept in the OS keychain, and "
        "refused with `inlineSecret` while the secret store is the file store.",
    )
    env_headers: dict[str, str] = Field(
        default_factory=dict, description="Headers whose values come from environment variables, by header name."
    )
    bearer_token_env_var: str | None = Field(
        default=None, description="The environment variable holding a bearer token."
    )
    oauth: OAuthSettings | None = Field(default=None, description="Log in with OAuth.")


def _config_type(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("type", "stdio"))
    return str(getattr(value, "type", "stdio"))


_PLAIN_MESSAGES = {
    "union_tag_invalid": 'type must be "stdio" or "http"',
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "dict_type": "must be an object",
}


def _config_error(loc: tuple[str | int, ...], message: str, value: Any) -> ValidationError:
    error = PydanticCustomError("invalidConfig", message)
    return ValidationError.from_exception_data("McpServerConfig", [{"type": error, "loc": loc, "input": value}])


def _plain_errors(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Validate a config and word its errors for people: no union branch names or class names in them."""
    if not isinstance(value, dict | StdioServerConfig | HttpServerConfig):
        raise _config_error((), "a server config must be an object", value)
    kind = value.get("type") if isinstance(value, dict) else value.type
    if isinstance(value, dict):
        if "type" in value and kind not in TRANSPORTS:
            raise _config_error(("type",), 'type must be "stdio" or "http"', value)
        if kind is None and "url" in value:
            raise _config_error(
                ("type",), 'a server with a url needs type: "http" (type may be omitted only for stdio)', value
            )
    try:
        return handler(value)
    except ValidationError as exc:
        line_errors: list[InitErrorDetails] = []
        for err in exc.errors(include_url=False):
            loc = err["loc"][1:] if err["loc"] and err["loc"][0] in TRANSPORTS else err["loc"]
            message = _PLAIN_MESSAGES.get(err["type"], err["msg"])
            if err["type"] == "extra_forbidden":
                message = f"is not a field of a {kind or 'stdio'} server"
            line_errors.append({"type": PydanticCustomError("invalidConfig", message), "loc": loc, "input": None})
        raise ValidationError.from_exception_data("McpServerConfig", line_errors) from None


McpServerConfig = TypeAliasType(
    "McpServerConfig",
    Annotated[
        Annotated[StdioServerConfig, Tag("stdio")] | Annotated[HttpServerConfig, Tag("http")],
        Discriminator(_config_type),
        WrapValidator(_plain_errors),
        Field(description="How to reach an MCP server (a stdio command or an http URL) and how to use it."),
    ],
)
"""A named alias, so the schema and the TypeScript bindings show one ``McpServerConfig`` type."""


def as_written(config: StdioServerConfig | HttpServerConfig) -> dict[str, Any]:
    """The JSON form with only the fields the user set (and ``type``): defaults apply when used, not stored."""
    return {"type": config.type, **config.model_dump(mode="json", by_alias=True, exclude_unset=True)}
