"""The ``mcpServer/*`` and ``mcpServerStatus/*`` namespace: store, lifecycle, status, import/sync, OAuth."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_serializer

from protocol.base import Empty, OpenModel, PageParams, PublishedAs, WireModel
from protocol.config import AppName, McpServerConfig, as_written
from protocol.content import Icon, Implementation, Resource, ResourceTemplate, ServerCapabilities, ToolAnnotations
from protocol.reasons import ErrorReason, SkipReason

RuntimeStatus = Literal[
    "notStarted", "starting", "connected", "idle", "authenticationRequired", "failed", "cancelled", "disabled"
]
"""``idle``: a thread's connection that went quiet and sleeps (its server stopped, its catalog kept)."""
AuthStatus = Literal["unknown", "unsupported", "notLoggedIn", "bearerToken", "oAuth"]
StartupState = Literal["starting", "ready", "failed", "cancelled"]

_NAME = "The server's name."
_NEXT = "Pass as `cursor` for the next page; absent at the end."


class ServerRecord(WireModel):
    """A stored server as `mcpServer/list` shows it (secrets already redacted).

    `config` is sent as the user wrote it (defaults apply when used, not stored), so its published shape is the
    input shape, where defaulted fields are optional. Every env or header value in it reads `"***"`; send the config
    back unchanged and those values are kept.
    """

    model_config = WireModel.model_config | ConfigDict(json_schema_mode_override="validation")

    name: str = Field(description=_NAME)
    config: McpServerConfig
    enabled: bool = Field(description="Whether this daemon starts it and offers it to threads.")
    revision: int = Field(description="Bumped by every change; pass as `expectedRevision` to update safely.")
    source: str = Field(description="Where it came from: `user` or `import:<app>`.")
    created_at: str = Field(description="When it was created (ISO 8601).")
    updated_at: str = Field(description="When it last changed (ISO 8601).")

    @field_serializer("config")
    def _config_as_written(self, config: McpServerConfig) -> dict[str, Any]:
        return as_written(config)


class ServerListParams(PageParams):
    """`mcpServer/list`: the stored servers, a page at a time, or just the ones named."""

    names: list[str] | None = Field(
        default=None, max_length=256, description="Only these servers (`unknownServer` for a missing one)."
    )


class ServerListResult(WireModel):
    """One page of stored servers."""

    data: list[ServerRecord] = Field(description="The servers, by name.")
    next_cursor: str | None = Field(default=None, description=_NEXT)


class ServerCreateParams(WireModel):
    """`mcpServer/create`: store a new server."""

    name: str = Field(description="1-24 characters of `[A-Za-z0-9_-]`, never containing `__`.")
    config: McpServerConfig = Field(description="How to reach the server.")


class ServerUpdateParams(WireModel):
    """`mcpServer/update`: exactly one of `config` (the whole config) and `patch` (an RFC 7396 merge patch over the
    stored one)."""

    name: str = Field(description=_NAME)
    config: McpServerConfig | None = Field(
        default=None, description='The whole new config; a `"***"` keeps the stored value at that place.'
    )
    patch: dict[str, Any] | None = Field(
        default=None, description="A JSON merge patch over the stored config (`null` removes a key)."
    )
    expected_revision: int | None = Field(
        default=None, description="Fail with `revisionMismatch` unless the stored revision is this one."
    )


class ServerResult(WireModel):
    """The server as stored after the change."""

    server: ServerRecord = Field(description="The stored server.")


class ServerNameParams(WireModel):
    """A request about one stored server."""

    name: str = Field(description=_NAME)


class ServerEnabledSetParams(WireModel):
    """`mcpServer/enabled/set`: switch a server on or off, for this daemon or for one sync target."""

    name: str = Field(description=_NAME)
    enabled: bool = Field(description="On or off.")
    app: AppName | None = Field(default=None, description="A sync target to switch; absent: this daemon.")


class ErrorInfoData(WireModel):
    """Details of a status row's `lastError`."""

    dropped_tools: list[str] | None = Field(
        default=None, description="Tools left out of the catalog because their `x-mcp-header` annotations are invalid."
    )


class ErrorInfo(WireModel):
    """A typed failure carried inside a result or event (never a traceback)."""

    reason: ErrorReason = Field(description="What went wrong, as a typed reason.")
    message: str = Field(description="The same in plain words, for people.")
    data: ErrorInfoData | None = Field(default=None, description="Details, where the failure has any.")


class McpTool(OpenModel):
    """A tool exactly as its MCP server described it (its `_meta` and other extra fields kept as sent)."""

    name: str = Field(description="The tool's name on its server.")
    title: str | None = Field(default=None, description="A name to show to people.")
    description: str | None = Field(default=None, description="What the tool does.")
    input_schema: dict[str, Any] = Field(description="The JSON Schema its arguments must match.")
    output_schema: dict[str, Any] | None = Field(
        default=None, description="The JSON Schema its `structuredContent` must match, if it declares one."
    )
    annotations: Annotated[dict[str, Any], PublishedAs(ToolAnnotations)] | None = Field(
        default=None, description="Hints about its behaviour."
    )
    icons: Annotated[list[Any], PublishedAs(list[Icon])] | None = Field(
        default=None, description="Icons to show for it."
    )


class ServerStatus(WireModel):
    """One server's live state on one connection (the management one, or a thread's).

    `lastError` is why the connection last failed, if it did.
    """

    name: str = Field(description=_NAME)
    runtime_status: RuntimeStatus = Field(description="Where its connection is.")
    server_info: Implementation | None = Field(default=None, description="Who the server says it is, once connected.")
    server_capabilities: ServerCapabilities | None = Field(
        default=None, description="What it says it supports, once connected."
    )
    protocol_version: str | None = Field(default=None, description="The MCP version the connection speaks.")
    tools: dict[str, McpTool] = Field(default_factory=dict, description="Its tools, by their name on the server.")
    tools_error: ErrorInfo | None = Field(default=None, description="Why its tools could not be listed.")
    resources: list[Resource] = Field(default_factory=list, description="The resources it lists.")
    resource_templates: list[ResourceTemplate] = Field(
        default_factory=list, description="The resource templates it lists."
    )
    auth_status: AuthStatus = Field(default="unknown", description="How it authenticates, and whether a login is due.")
    last_error: ErrorInfo | None = None  # described in the docstring: test_schemas.py pins a bare reference
    stderr_tail: str | None = Field(
        default=None, description="The end of a stdio server's stderr (secrets redacted), after a failure."
    )


class ServerStatusListParams(PageParams):
    """`mcpServerStatus/list`: the live state of every server, or of one."""

    detail: Literal["full", "toolsAndAuthOnly"] = Field(
        default="full", description="`toolsAndAuthOnly` leaves out resources and templates."
    )
    server_name: str | None = Field(default=None, description="Only this server.")
    thread_id: str | None = Field(
        default=None, description="This thread's connections (waiting for its starting servers); else management."
    )


class ServerStatusListResult(WireModel):
    """One page of status rows."""

    data: list[ServerStatus] = Field(description="The rows, by server name.")
    next_cursor: str | None = Field(default=None, description=_NEXT)


class ServerStartResult(WireModel):
    """The server's state once started."""

    status: ServerStatus = Field(description="Its status row.")


class ImportFromAppParams(WireModel):
    """`mcpServer/importFromApp`: copy the servers another app is configured with into the store."""

    app: AppName = Field(description="The app to import from.")
    path: str | None = Field(default=None, description="Its config file; absent: the app's usual place.")
    dry_run: bool = Field(default=False, description="Report what would be imported without storing anything.")


class SkippedEntry(WireModel):
    """An entry an import left out, and why."""

    name: str = Field(description="The entry's name in the app's config.")
    reason: SkipReason = Field(description="Why it was left out.")


class ImportFromAppResult(WireModel):
    """What an import did (or, with `dryRun`, would do)."""

    imported: list[str] = Field(description="The servers stored.")
    skipped: list[SkippedEntry] = Field(description="The entries left out.")
    warnings: list[str] = Field(description="Things to tell the user, in plain words.")


class SyncAllToLiveParams(WireModel):
    """`mcpServer/syncAllToLive`: write the servers marked for each app into that app's live config."""

    apps: list[AppName] | None = Field(default=None, description="Only these apps; absent: all.")
    dry_run: bool = Field(default=False, description="Report what would change without writing anything.")


class SyncAppResult(WireModel):
    """What a sync did to one app's config."""

    app: AppName = Field(description="The app.")
    path: str = Field(description="Its config file.")
    servers: list[str] = Field(description="The servers now written there by this daemon.")
    changed: bool = Field(description="Whether the file changed (or, with `dryRun`, would).")
    backup_path: str | None = Field(default=None, description="Where the previous file was saved.")
    error: ErrorInfo | None = Field(default=None, description="Why this app's file was left untouched.")
    warnings: list[str] | None = Field(default=None, description="Things to tell the user, in plain words.")


class SyncAllToLiveResult(WireModel):
    """What a sync did, app by app."""

    results: list[SyncAppResult] = Field(description="One result per app.")


class OAuthLoginParams(WireModel):
    """`mcpServer/oauth/login`: start an OAuth login; open the returned URL in the system browser."""

    name: str = Field(description=_NAME)
    scopes: list[str] | None = Field(
        default=None, description="Scopes to ask for; absent: those the server last asked for, plus the previous ones."
    )
    timeout_secs: int | None = Field(
        default=None, ge=1, le=600, strict=True, description="How long the login may take, in seconds (180)."
    )
    thread_id: str | None = Field(default=None, description="The thread the login is for, echoed in the completion.")


class OAuthLoginResult(WireModel):
    """A login under way; `mcpServer/oauthLogin/completed` tells how it ends."""

    authorization_url: str = Field(description="Open this in the system browser.")
    login_id: str = Field(description="Names this login in its completion notification.")


class StartupStatusUpdated(WireModel):
    """`mcpServer/startupStatus/updated`: the strict lifecycle set, in order, never duplicated.

    `threadId` names the thread whose connection it is, or is null for the management connection.
    """

    thread_id: str | None
    name: str = Field(description=_NAME)
    status: StartupState = Field(description="`starting`, then `ready`, `failed` or `cancelled`.")
    error: ErrorInfo | None = Field(description="With `failed`: why.")
    failure_reason: Literal["reauthenticationRequired"] | None = Field(
        description="Set when the failure needs a new login."
    )


class OAuthLoginCompleted(WireModel):
    """`mcpServer/oauthLogin/completed`: published once per login to every connection."""

    name: str = Field(description=_NAME)
    login_id: str = Field(description="The `loginId` the login request answered.")
    thread_id: str | None = Field(description="The thread the login was for, or null.")
    success: bool = Field(description="Whether the server now has a credential.")
    error: ErrorInfo | None = Field(description="Without success: why.")


ServerDeleteResult = Empty
ServerStopResult = Empty
