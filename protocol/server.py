"""The ``mcpServer/*`` and ``mcpServerStatus/*`` namespace: store, lifecycle, status, import/sync, OAuth."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, field_serializer

from protocol.base import Empty, OpenModel, PageParams, WireModel
from protocol.config import AppName, McpServerConfig, as_written

RuntimeStatus = Literal[
    "notStarted", "starting", "connected", "authenticationRequired", "failed", "cancelled", "disabled"
]
AuthStatus = Literal["unknown", "unsupported", "notLoggedIn", "bearerToken", "oAuth"]
StartupState = Literal["starting", "ready", "failed", "cancelled"]


class ServerRecord(WireModel):
    """A stored server as ``mcpServer/list`` shows it (secrets already redacted).

    ``config`` is sent as the user wrote it (defaults apply when used, not stored), so its published shape is the
    input shape, where defaulted fields are optional.
    """

    model_config = WireModel.model_config | ConfigDict(json_schema_mode_override="validation")

    name: str
    config: McpServerConfig
    enabled: bool
    revision: int
    source: str
    created_at: str
    updated_at: str

    @field_serializer("config")
    def _config_as_written(self, config: McpServerConfig) -> dict[str, Any]:
        return as_written(config)


class ServerListParams(PageParams):
    names: list[str] | None = Field(default=None, max_length=256)


class ServerListResult(WireModel):
    data: list[ServerRecord]
    next_cursor: str | None = None


class ServerCreateParams(WireModel):
    name: str
    config: McpServerConfig


class ServerUpdateParams(WireModel):
    """Exactly one of ``config`` (the whole config) and ``patch`` (an RFC 7396 merge patch over the stored one)."""

    name: str
    config: McpServerConfig | None = None
    patch: dict[str, Any] | None = None
    expected_revision: int | None = None


class ServerResult(WireModel):
    server: ServerRecord


class ServerNameParams(WireModel):
    name: str


class ServerEnabledSetParams(WireModel):
    name: str
    enabled: bool
    app: AppName | None = None


class ErrorInfo(WireModel):
    """A typed failure carried inside a result or event (never a traceback)."""

    reason: str
    message: str


class McpTool(OpenModel):
    """A tool exactly as its MCP server described it."""

    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None


class ServerStatus(WireModel):
    name: str
    runtime_status: RuntimeStatus
    server_info: dict[str, Any] | None = None
    server_capabilities: dict[str, Any] | None = None
    protocol_version: str | None = None
    tools: dict[str, McpTool] = Field(default_factory=dict)
    tools_error: ErrorInfo | None = None
    resources: list[dict[str, Any]] = Field(default_factory=list)
    resource_templates: list[dict[str, Any]] = Field(default_factory=list)
    auth_status: AuthStatus = "unknown"
    last_error: ErrorInfo | None = None
    stderr_tail: str | None = None


class ServerStatusListParams(PageParams):
    detail: Literal["full", "toolsAndAuthOnly"] = "full"
    server_name: str | None = None
    thread_id: str | None = None


class ServerStatusListResult(WireModel):
    data: list[ServerStatus]
    next_cursor: str | None = None


class ServerStartResult(WireModel):
    status: ServerStatus


class ImportFromAppParams(WireModel):
    app: AppName
    path: str | None = None
    dry_run: bool = False


class SkippedEntry(WireModel):
    name: str
    reason: str


class ImportFromAppResult(WireModel):
    imported: list[str]
    skipped: list[SkippedEntry]
    warnings: list[str]


class SyncAllToLiveParams(WireModel):
    apps: list[AppName] | None = None
    dry_run: bool = False


class SyncAppResult(WireModel):
    app: AppName
    path: str
    servers: list[str]
    changed: bool
    backup_path: str | None = None
    error: ErrorInfo | None = None
    warnings: list[str] | None = None


class SyncAllToLiveResult(WireModel):
    results: list[SyncAppResult]


class OAuthLoginParams(WireModel):
    name: str
    scopes: list[str] | None = None
    timeout_secs: int | None = Field(default=None, ge=1, le=600)
    thread_id: str | None = None


class OAuthLoginResult(WireModel):
    authorization_url: str
    login_id: str


class StartupStatusUpdated(WireModel):
    """``mcpServer/startupStatus/updated``: the strict lifecycle set, in order, never duplicated."""

    thread_id: str | None
    name: str
    status: StartupState
    error: ErrorInfo | None
    failure_reason: Literal["reauthenticationRequired"] | None


class OAuthLoginCompleted(WireModel):
    """``mcpServer/oauthLogin/completed``: published once per login to every connection."""

    name: str
    login_id: str
    thread_id: str | None
    success: bool
    error: ErrorInfo | None


ServerDeleteResult = Empty
ServerStopResult = Empty
