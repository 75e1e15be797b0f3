"""What ``error.data`` carries with each reason (SPEC §1 Errors): one discriminated union on ``reason``.

The daemon raises ``AppError(reason, message, **details)`` and never builds these models; they describe, for the
schema and the typed clients, the details each reason comes with. A detail is required only where every place
that raises the reason sets it. Every model keeps fields it does not list: any error about one server may also
name it (``server``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import Field
from typing_extensions import TypeAliasType

from protocol.base import OpenModel, WireModel
from protocol.constants import TransportName
from protocol.elicitation import ValidationIssue
from protocol.install import PolicyRule
from protocol.jsonrpc import REASON_CODES

_ERRORS = "What was wrong, field by field."


_REASON = "What went wrong; `errorCodes` gives its JSON-RPC code."


class ErrorDetails(OpenModel):
    """Fields any reason may carry."""

    reason: str = Field(description=_REASON)
    server: str | None = Field(default=None, description="The MCP server the error is about, if one is.")

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls.model_fields["reason"].description = _REASON  # each model narrows the type, the meaning stays


class PlainErrorData(ErrorDetails):
    """Reasons that carry no details beyond `server`."""

    reason: Literal[
        "parseError",
        "invalidRequest",
        "messageTooLarge",
        "alreadyInitialized",
        "methodNotFound",
        "threadRequired",
        "invalidElicitationResponse",
        "overloaded",
        "notInitialized",
        "cancelled",
        "unknownLogin",
        "serverBusy",
        "oauthHeaderConflict",
        "redirectRejected",
        "noThreadOwner",
        "notRunning",
        "authRequired",
    ]


class ReauthenticationRequiredErrorData(ErrorDetails):
    """The login is gone (a refused refresh, or an enterprise IdP that refused the user's ID token): log in again,
    or for an IdP, have the host's sign-on write a fresh ID token."""

    reason: Literal["reauthenticationRequired"]
    step: str | None = Field(default=None, description="`idp` when the enterprise IdP refused the ID token.")


class RetiredErrorData(ErrorDetails):
    """A retired method name."""

    reason: Literal["retired"]
    replacement: str | None = Field(default=None, description="The method to call instead, where there is one.")


class InvalidParamsErrorData(ErrorDetails):
    """Params the daemon cannot accept."""

    reason: Literal["invalidParams"]
    errors: list[ValidationIssue] | None = Field(default=None, description=_ERRORS)
    path: str | None = Field(default=None, description="The file that could not be read as an app's config.")


class InvalidArgumentsErrorData(ErrorDetails):
    """Tool arguments that do not match the tool's `inputSchema` (nothing was sent to the server)."""

    reason: Literal["invalidArguments"]
    tool: str = Field(description="The tool's name on its server.")
    errors: list[ValidationIssue] = Field(description=_ERRORS)


class InvalidServerNameErrorData(ErrorDetails):
    """A server name outside the rule (1-24 of `[A-Za-z0-9_-]`, no `__`)."""

    reason: Literal["invalidServerName"]
    name: str = Field(description="The name given (at most 64 characters of it).")


class RedactedValueErrorData(ErrorDetails):
    """A `"***"` where nothing is stored, or a kept secret following a server to a new destination."""

    reason: Literal["redactedValue"]
    path: str = Field(description="The field whose real value must be sent.")
    errors: list[ValidationIssue] = Field(description=_ERRORS)


class PathErrorData(ErrorDetails):
    """A file the daemon refused to read or write, or could not write for want of space (`storageFull`: the data
    dir's disk or quota is full; nothing was changed)."""

    reason: Literal["notARegularFile", "unsafePath", "storageFull"]
    path: str = Field(description="The file.")


class InternalErrorData(ErrorDetails):
    """A failure inside the daemon, or a store file it cannot read (never a traceback)."""

    reason: Literal["internal", "storeCorrupted"]
    path: str | None = Field(default=None, description="The file involved, if one is.")


class UnknownThreadErrorData(ErrorDetails):
    """No thread has this id."""

    reason: Literal["unknownThread"]
    thread_id: str = Field(description="The id given (at most 64 characters of it).")


class ThreadArchivedErrorData(ErrorDetails):
    """The thread is archived."""

    reason: Literal["threadArchived"]
    thread_id: str | None = Field(default=None, description="The thread.")


class UnknownTaskErrorData(ErrorDetails):
    """The thread has no task with this id (never started there, or forgotten after its TTL)."""

    reason: Literal["unknownTask"]
    task_id: str = Field(description="The id given (at most 64 characters of it).")


class UrlElicitation(WireModel):
    """A URL the server asks a person to visit before it will answer (a checked URL: https, or http to loopback)."""

    mode: Literal["url"] = Field(description="Always `url`.")
    url: str = Field(description="The page to open, after showing its full origin.")
    elicitation_id: str = Field(description="Named again by `mcpServer/elicitation/completed` when it is done.")
    message: str = Field(description="What the server says it is for.")


class UrlElicitationRequiredErrorData(ErrorDetails):
    """The server will not answer the call until a person visits a URL (MCP `-32042`); retry the call after
    `mcpServer/elicitation/completed`."""

    reason: Literal["urlElicitationRequired"]
    elicitations: list[UrlElicitation] = Field(description="The URLs to visit (those that failed the checks left out).")


class UnknownServerErrorData(ErrorDetails):
    """No server has this name (in the store, on a connection or in a thread)."""

    reason: Literal["unknownServer"]
    server: str = Field(description="The server name given.")


class ToolErrorData(ErrorDetails):
    """A tool that does not exist, may not be called here, or has a name that cannot be carried."""

    reason: Literal["unknownTool", "toolNotAllowed", "invalidToolName"]
    server: str = Field(description="The server.")
    tool: str = Field(description="The tool's name on that server.")
    visibility: list[Literal["model", "app"]] | None = Field(
        default=None, description="With `toolNotAllowed` across the MCP Apps boundary: who may call it."
    )


class UnknownPromptErrorData(ErrorDetails):
    """The server has no prompt with this name."""

    reason: Literal["unknownPrompt"]
    server: str = Field(description="The server.")
    prompt: str = Field(description="The prompt name given.")


class UnknownResourceErrorData(ErrorDetails):
    """The server has no such resource (`uri`), or an app has no config file there (`path`)."""

    reason: Literal["unknownResource"]
    uri: str | None = Field(default=None, description="The resource URI given.")
    path: str | None = Field(default=None, description="The app config file that does not exist.")


class UnknownRefErrorData(ErrorDetails):
    """The thread's archive has no such ref."""

    reason: Literal["unknownRef"]
    ref: str = Field(description="The ref given.")


class ServerExistsErrorData(ErrorDetails):
    """A server with this name is already stored."""

    reason: Literal["serverExists"]
    name: str = Field(description="The name.")


class ConflictingServerConfigErrorData(ErrorDetails):
    """A thread's server and an app server share a name but not a config."""

    reason: Literal["conflictingServerConfig"]
    server: str = Field(description="The name both use.")


class RevisionMismatchErrorData(ErrorDetails):
    """The stored server (or an app's file) changed since it was read; read it again."""

    reason: Literal["revisionMismatch"]
    name: str | None = Field(default=None, description="The server.")
    revision: int | None = Field(default=None, description="Its stored revision.")


class HeaderErrorData(ErrorDetails):
    """A header name or value the policy refuses."""

    reason: Literal["invalidHeader", "reservedHeader"]
    header: str = Field(description="The header's name.")


class InlineSecretErrorData(ErrorDetails):
    """A secret written into the config instead of an environment reference."""

    reason: Literal["inlineSecret"]
    header: str | None = Field(default=None, description="The header holding it, if it is one.")


class MissingEnvVarErrorData(ErrorDetails):
    """An environment variable the config names is not set."""

    reason: Literal["missingEnvVar"]
    variable: str = Field(description="The variable.")


class SecretStoreLockedErrorData(ErrorDetails):
    """The OS keychain is locked (or does not answer): nothing was read, deleted or rewritten; a later start
    retries."""

    reason: Literal["secretStoreLocked"]
    backend: str = Field(description="The keychain that refused, as `initialize.secretStore.backend` names it.")


class MissingSecretErrorData(ErrorDetails):
    """A secret the config keeps in the keychain is no longer there (removed behind the daemon's back): send the
    value again with `mcpServer/update`."""

    reason: Literal["missingSecret"]
    field: str = Field(description="The config field whose value is missing, such as `env.API_KEY`.")


class InsecureUrlErrorData(ErrorDetails):
    """A URL that is not `https` (or `http` to loopback), or carries userinfo or a fragment."""

    reason: Literal["insecureUrl"]
    field: str = Field(description="Which URL: the config field or OAuth endpoint.")


class UnsafeEnvErrorData(ErrorDetails):
    """A stdio config's `env` sets a variable the dynamic loader reads (`LD_PRELOAD`, `DYLD_*`, ...), or a config
    names a daemon variable outside the deployment's `--allow-env`."""

    reason: Literal["unsafeEnv"]
    variable: str = Field(description="The variable refused.")


class OriginNotAllowedErrorData(ErrorDetails):
    """An OAuth endpoint on an origin the config does not list; ask the user, add it to `allowedOrigins`, retry."""

    reason: Literal["originNotAllowed"]
    origin: str = Field(description="The origin to ask the user about.")


class CallbackPortInUseErrorData(ErrorDetails):
    """The login's loopback callback port (`oauth.callbackPort`) is taken by another program."""

    reason: Literal["callbackPortInUse"]
    port: int = Field(description="The port.")


class UnsupportedErrorData(ErrorDetails):
    """Something this daemon (or, for a resource subscription, the server) does not do, and does not pretend to."""

    reason: Literal["unsupported"]
    name: str | None = Field(default=None, description="The server, if one is concerned.")
    field: str | None = Field(default=None, description="The app config field that is not supported.")
    uri: str | None = Field(default=None, description="The resource the server does not accept a subscription to.")


class TransportNotAllowedErrorData(ErrorDetails):
    """The deployment does not allow this transport (`--transports`)."""

    reason: Literal["transportNotAllowed"]
    transport: TransportName = Field(description="The transport refused.")
    name: str | None = Field(default=None, description="The server.")


class LimitErrorData(ErrorDetails):
    """A count limit was exceeded."""

    reason: Literal["tooManyServers", "tooManyTools", "catalogTooLarge", "tooManyPages", "tooManyTasks"]
    limit: int = Field(description="The limit.")


class SizeLimitErrorData(ErrorDetails):
    """A size limit was exceeded."""

    reason: Literal["configTooLarge", "responseTooLarge", "resourceTooLarge"]
    limit: int | None = Field(default=None, description="The limit in bytes.")
    size: int | None = Field(default=None, description="The size in bytes of what was refused, when known.")
    path: str | None = Field(default=None, description="The file that is too large.")


class StartupFailedErrorData(ErrorDetails):
    """A server could not be started or connected."""

    reason: Literal["startupFailed"]
    detail: str | None = Field(
        default=None,
        description="The kind of failure: `commandNotFound`, `tooManyOpenFiles`, `connectionRefused`, "
        "`nameNotResolved`, `connectTimeout`, `httpStatus` (the server refused the handshake with an HTTP error), "
        "`unsupportedProtocolVersion` (the server refused the version the config pins), …",
    )
    http_status: int | None = Field(default=None, description="The HTTP status the server refused the start with.")
    protocol: str | None = Field(default=None, description="With `unsupportedProtocolVersion`: the pinned version.")
    command: str | None = Field(default=None, description="With `commandNotFound`: the command.")
    searched: list[str] | None = Field(default=None, description="With `commandNotFound`: the directories looked in.")
    stderr_tail: str | None = Field(default=None, description="The end of the server's stderr (secrets redacted).")
    tool: str | None = Field(default=None, description="The tool whose schema is invalid.")


class ConnectionLostErrorData(ErrorDetails):
    """A server's connection ended or stopped answering after it was ready."""

    reason: Literal["connectionLost"]
    detail: str | None = Field(
        default=None,
        description="The kind of failure when the server stopped answering: `connectionRefused`, `nameNotResolved`, "
        "`connectTimeout`, …",
    )


class UpstreamErrorData(ErrorDetails):
    """The MCP server answered with an error."""

    reason: Literal["upstreamError"]
    server: str = Field(description="The server that answered.")
    mcp_code: int = Field(description="The server's JSON-RPC error code.")
    mcp_message: str = Field(description="The server's error message.")


class InvalidOutputErrorData(ErrorDetails):
    """The server's answer is malformed, or its `structuredContent` misses its `outputSchema`."""

    reason: Literal["invalidOutput"]
    detail: str | None = Field(default=None, description="What is malformed, in plain words.")
    errors: list[ValidationIssue] | None = Field(default=None, description="How the output misses its schema.")
    result: Any = Field(default=None, description="The tool's result all the same, for a host to show.")
    dropped_tools: list[str] | None = Field(
        default=None, description="Tools left out of the catalog because their `x-mcp-header` annotations are invalid."
    )


class TimeoutErrorData(ErrorDetails):
    """No answer in time: the call was cancelled upstream, its outcome is unknown, and it is never replayed."""

    reason: Literal["timeout"]
    tool: str | None = Field(default=None, description="The tool called.")
    method: str | None = Field(default=None, description="The MCP method (`initialize` for a start).")
    timeout_ms: int | None = Field(default=None, description="The deadline, in milliseconds.")
    stderr_tail: str | None = Field(default=None, description="The end of the server's stderr (secrets redacted).")


class InsufficientScopeErrorData(ErrorDetails):
    """The token lacks a scope; log in again (the login asks for the scopes named here)."""

    reason: Literal["insufficientScope"]
    required_scopes: list[str] = Field(description="The scopes the server asked for.")


class OAuthFailedErrorData(ErrorDetails):
    """An OAuth step failed."""

    reason: Literal["oauthFailed"]
    step: str | None = Field(
        default=None,
        description="`flow`, `network`, `registration`, `token`, `callback`, `verify`, `dpop`, `idp`, `assertion` "
        "or `internal`.",
    )
    status: int | None = Field(default=None, description="The HTTP status the server answered with.")
    oauth_error: str | None = Field(default=None, description="The authorization server's `error` code.")


class RegistryUnavailableErrorData(ErrorDetails):
    """The MCP Registry could not be reached and nothing is cached for this request."""

    reason: Literal["registryUnavailable"]
    url: str = Field(description="The registry's URL.")
    detail: str | None = Field(default=None, description="What failed, in plain words.")


class UnknownRegistryEntryErrorData(ErrorDetails):
    """The registry has no such entry (or version, or install option)."""

    reason: Literal["unknownRegistryEntry"]
    name: str = Field(description="The entry's name.")
    version: str | None = Field(default=None, description="The version asked for.")
    option: str | None = Field(default=None, description="The install option asked for.")


class InputErrorData(ErrorDetails):
    """An install input that is missing, outside its choices or not of its format."""

    reason: Literal["missingInput", "invalidInput"]
    input: str = Field(description="The input's key.")


class InvalidBundleErrorData(ErrorDetails):
    """A bundle whose file or manifest is not a valid MCP Bundle."""

    reason: Literal["invalidBundle"]
    errors: list[ValidationIssue] | None = Field(default=None, description=_ERRORS)
    path: str | None = Field(default=None, description="The bundle file.")


class UnsafeBundleErrorData(ErrorDetails):
    """A bundle entry that would land outside its folder: `..`, an absolute path, a link or a device."""

    reason: Literal["unsafeBundle"]
    entry: str = Field(description="The entry's name in the archive (at most 256 characters of it).")


class BundleTooLargeErrorData(ErrorDetails):
    """A bundle past a limit: unpacked size, file count or compression ratio."""

    reason: Literal["bundleTooLarge"]
    limit: int = Field(description="The limit.")
    measure: Literal["bytes", "files", "ratio"] = Field(description="What the limit counts.")


class PolicyDeniedErrorData(ErrorDetails):
    """The administrator's policy refuses this server, registry or bundle."""

    reason: Literal["policyDenied"]
    rule: PolicyRule = Field(description="The rule that refused it.")
    name: str | None = Field(default=None, description="The server.")


ErrorData = TypeAliasType(
    "ErrorData",
    Annotated[
        PlainErrorData
        | ReauthenticationRequiredErrorData
        | RetiredErrorData
        | InvalidParamsErrorData
        | InvalidArgumentsErrorData
        | InvalidServerNameErrorData
        | RedactedValueErrorData
        | PathErrorData
        | InternalErrorData
        | UnknownThreadErrorData
        | UnknownTaskErrorData
        | UrlElicitationRequiredErrorData
        | ThreadArchivedErrorData
        | UnknownServerErrorData
        | ToolErrorData
        | UnknownPromptErrorData
        | UnknownResourceErrorData
        | UnknownRefErrorData
        | ServerExistsErrorData
        | ConflictingServerConfigErrorData
        | RevisionMismatchErrorData
        | HeaderErrorData
        | InlineSecretErrorData
        | MissingEnvVarErrorData
        | SecretStoreLockedErrorData
        | MissingSecretErrorData
        | UnsafeEnvErrorData
        | InsecureUrlErrorData
        | OriginNotAllowedErrorData
        | CallbackPortInUseErrorData
        | UnsupportedErrorData
        | TransportNotAllowedErrorData
        | LimitErrorData
        | SizeLimitErrorData
        | StartupFailedErrorData
        | ConnectionLostErrorData
        | UpstreamErrorData
        | InvalidOutputErrorData
        | TimeoutErrorData
        | InsufficientScopeErrorData
        | OAuthFailedErrorData
        | RegistryUnavailableErrorData
        | UnknownRegistryEntryErrorData
        | InputErrorData
        | InvalidBundleErrorData
        | UnsafeBundleErrorData
        | BundleTooLargeErrorData
        | PolicyDeniedErrorData,
        Field(discriminator="reason", description="`error.data`: the typed `reason` and that reason's details."),
    ],
)


_MODELS: tuple[type[ErrorDetails], ...] = get_args(get_args(ErrorData.__value__)[0])


def reasons_of(model: type[ErrorDetails]) -> tuple[str, ...]:
    """The reasons a data model stands for (the values of its ``reason`` literal)."""
    return get_args(model.model_fields["reason"].annotation)


MODEL_OF_REASON: dict[str, type[ErrorDetails]] = {reason: model for model in _MODELS for reason in reasons_of(model)}
"""Each reason's data model; every reason of ``REASON_CODES`` has exactly one (checked on import)."""

if sorted(MODEL_OF_REASON) != sorted(REASON_CODES) or len(MODEL_OF_REASON) != sum(map(len, map(reasons_of, _MODELS))):
    raise ValueError("each error reason needs exactly one data model in protocol.errors")
