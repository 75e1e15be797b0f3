"""Live state of servers: status rows, the start-up lifecycle notification and a login's completion.

Apart from the store's records (``protocol.server``), so that a host's first ``mcpServer/list`` does not load the
models of MCP's own content (capabilities, resources, icons) it never sends.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from protocol.base import OpenModel, PageParams, PublishedAs, WireModel
from protocol.content import Icon, Implementation, Resource, ResourceTemplate, ServerCapabilities, ToolAnnotations
from protocol.server import ErrorInfo

_NAME = "The server's name."
_NEXT = "Pass as `cursor` for the next page; absent at the end."


RuntimeStatus = Literal[
    "notStarted", "starting", "connected", "idle", "authenticationRequired", "failed", "cancelled", "disabled"
]
"""``idle``: a thread's connection that went quiet and sleeps (its server stopped, its catalog kept)."""


AuthStatus = Literal["unknown", "unsupported", "notLoggedIn", "bearerToken", "oAuth"]


StartupState = Literal["starting", "ready", "failed", "cancelled"]


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
    instructions: str | None = Field(
        default=None,
        description="What the server says about how to use it (its `instructions`, at most 8 KiB), with `detail: "
        "full`: data for the host, which decides whether a model sees it; the daemon never injects it.",
    )
    instructions_truncated: bool | None = Field(
        default=None, description="`true` when `instructions` was cut to 8 KiB."
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
