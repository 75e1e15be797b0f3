"""The ``mcpServer/*`` namespace's store side: stored servers and their editing, import/sync, OAuth logins, and
the typed failure they report (``ErrorInfo``); live state is ``protocol.status``."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, field_serializer

from protocol.base import Empty, PageParams, WireModel
from protocol.config import AppName, McpServerConfig, as_written
from protocol.install import InstalledFrom, PolicyRule
from protocol.reasons import ErrorReason, SkipReason

_NAME = "The server's name."
_NEXT = "Pass as `cursor` for the next page; absent at the end."


class ErrorInfoData(WireModel):
    """Details of a status row's `lastError`."""

    dropped_tools: list[str] | None = Field(
        default=None, description="Tools left out of the catalog because their `x-mcp-header` annotations are invalid."
    )
    detail: str | None = Field(
        default=None, description="What kind of start failure: `commandNotFound`, `tooManyOpenFiles`, ..."
    )
    command: str | None = Field(default=None, description="With `commandNotFound`: the command looked for.")
    searched: list[str] | None = Field(default=None, description="With `commandNotFound`: the folders looked in.")
    variable: str | None = Field(default=None, description="With `missingEnvVar`/`unsafeEnv`: the variable.")
    step: str | None = Field(default=None, description="With an OAuth failure: the step that failed.")
    path: str | None = Field(default=None, description="With `unsafePath`/`storageFull`: the file.")


class ErrorInfo(WireModel):
    """A typed failure carried inside a result or event (never a traceback)."""

    reason: ErrorReason = Field(description="What went wrong, as a typed reason.")
    message: str = Field(description="The same in plain words, for people.")
    data: ErrorInfoData | None = Field(default=None, description="Details, where the failure has any.")


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
    source: str = Field(
        description="Where it came from: `user`, `import:<app>`, `registry:<name>@<version>` or "
        "`bundle:<name>@<version>`."
    )
    installed_from: InstalledFrom | None = Field(
        default=None, description="For an installed server: the registry entry or bundle, and whether it is outdated."
    )
    denied_by: PolicyRule | None = Field(
        default=None, description="The administrator's rule that keeps this server from starting, if one does."
    )
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


ServerDeleteResult = Empty
ServerStopResult = Empty
