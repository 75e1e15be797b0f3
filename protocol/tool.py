"""The ``mcpTool/*`` namespace and ``mcpServer/tool/call`` with its progress notification."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from protocol.base import OpenModel, PageParams, PublishedAs, WireModel, required_in_schema
from protocol.content import ContentBlock, ToolAnnotations

_CALLER = "Only tools this caller may use (tools that restrict their callers name them)."
_NEXT = "Pass as `cursor` for the next page; absent at the end."


Visibility = Literal["model", "app"]
"""Who may call a tool (MCP Apps): the model, or the view (app) of its server."""
BOTH: tuple[Visibility, ...] = ("model", "app")


class ToolUi(WireModel):
    """A tool's MCP Apps view (`_meta.ui`, or the older `_meta["ui/resourceUri"]`)."""

    resource_uri: str | None = Field(
        default=None, description="The `ui://` resource the host renders for it; null for a tool only a view calls."
    )
    visibility: list[Visibility] = Field(
        description="Who may call it: `model` (listed to models), `app` (its server's view); both by default."
    )


class ToolView(WireModel):
    """A tool as the host sees it: full name `mcp__<server>__<tool>` plus visibility flags."""

    name: str = Field(description="The full name, `mcp__<server>__<tool>`: what a model calls it.")
    server: str = Field(description="The server that offers it.")
    tool: str = Field(description="Its name on that server.")
    title: str | None = Field(default=None, description="A name to show to people.")
    description: str | None = Field(default=None, description="What the tool does.")
    input_schema: dict[str, Any] = Field(description="The JSON Schema its arguments must match.")
    output_schema: dict[str, Any] | None = Field(
        default=None, description="The JSON Schema its `structuredContent` must match, if it declares one."
    )
    annotations: Annotated[dict[str, Any], PublishedAs(ToolAnnotations)] | None = Field(
        default=None, description="Hints about its behaviour (they grant nothing)."
    )
    deferred: bool = Field(description="Left out of a model's tool list until searched for (`toolLoading`).")
    always_visible: bool = Field(description="Listed even when its server's tools are deferred.")
    ui: ToolUi | None = Field(
        default=None, description="Its MCP Apps view and who may call it; absent for a plain tool (both may)."
    )


class ToolListParams(PageParams):
    """`mcpTool/list`: every tool of the connected servers (management connection)."""

    server: str | None = Field(default=None, description="Only this server's tools.")


class ToolListResult(WireModel):
    """One page of tools."""

    data: list[ToolView] = Field(description="The tools.")
    next_cursor: str | None = Field(default=None, description=_NEXT)


class ToolListForContextParams(WireModel):
    """`mcpTool/listForContext`: the tools a model in this context may see."""

    thread_id: str | None = Field(default=None, description="The thread's tools (its servers and filters).")
    caller: str | None = Field(default=None, description=_CALLER)
    include_deferred: bool = Field(default=False, description="Include deferred tools too.")


class ToolListForContextResult(WireModel):
    """The tools that context may see."""

    data: list[ToolView] = Field(description="The tools.")


class ToolSearchParams(WireModel):
    """`mcpTool/search`: a ranked keyword search, or `select:<full name>,...` for exactly those tools."""

    query: str = Field(
        max_length=4096, description="Words to look for (`+word`: required), or `select:mcp__a__b,mcp__c__d`."
    )
    limit: int = Field(default=10, ge=1, le=100, description="The most tools to return.")
    thread_id: str | None = Field(default=None, description="Search the thread's tools; else the management catalog.")
    caller: str | None = Field(default=None, description=_CALLER)


class ToolSearchResult(WireModel):
    """The tools found, best first (or in the order `select:` named them)."""

    data: list[ToolView] = Field(description="The tools.")
    missing: list[str] | None = Field(default=None, description="With `select:`: the names no tool has.")


class ToolCallParams(WireModel):
    """`mcpServer/tool/call`: run a tool in a thread (the only way tools run).

    `threadId` is required; the model accepts its absence so that it gets the typed `threadRequired`.
    """

    model_config = ConfigDict(json_schema_extra=required_in_schema("threadId"))

    thread_id: str | None = None
    turn_id: str | None = Field(default=None, description="The host's turn, echoed in progress and elicitations.")
    server: str = Field(description="The server that offers the tool.")
    tool: str = Field(description="The tool's name on that server.")
    arguments: dict[str, Any] | None = Field(default=None, description="The arguments, checked against `inputSchema`.")
    timeout_ms: int | None = Field(
        default=None,
        ge=1,
        le=300_000,
        strict=True,
        description="Give up after this long (default: the server's `toolTimeoutMs`).",
    )
    meta: dict[str, Any] | None = Field(default=None, alias="_meta", description="MCP `_meta` to send with the call.")
    origin: Visibility = Field(
        default="model",
        description="Who calls: the model, or a server's own view (`app`); each reaches only the tools whose "
        "`ui.visibility` names it (`toolNotAllowed` otherwise).",
    )
    background: bool = Field(
        default=False,
        description="Answer at once with a task (`{task}`) and run the call in the background; read it with "
        "`mcpServer/task/result`.",
    )
    ttl_ms: int | None = Field(
        default=None,
        ge=1000,
        le=86_400_000,
        strict=True,
        description="With `background`: how long the finished task is kept (default one hour, at most 24 hours).",
    )


class ProjectionRef(WireModel):
    """One archived piece of a result: the full projection text (`text`) or a media/embedded blob."""

    ref: str = Field(description="Read it back with `thread/context/read`.")
    kind: Literal["text", "image", "audio", "resource"] = Field(description="What was archived.")
    mime_type: str | None = Field(default=None, description="Its MIME type, when known.")
    bytes: int = Field(description="Its stored size in bytes.")
    sha256: str = Field(description="Its SHA-256, hex.")


class Projection(WireModel):
    """What a model is given: at most 16 KiB of text; larger text and every blob behind a `ref`."""

    text: str = Field(description="The result as text for a model, at most 16 KiB.")
    truncated: bool = Field(description="Whether the text was cut (the whole is behind a `text` ref).")
    refs: list[ProjectionRef] = Field(description="The archived pieces.")
    archive_error: Literal["storageFull"] | None = Field(
        default=None,
        description="Why nothing was archived (the data dir's disk is full): `text` is then cut to 16 KiB with no "
        "refs, and `content` is still complete.",
    )
    content_omitted: bool | None = Field(
        default=None,
        description="The result was too large to carry in the answer (tens of MiB): `content` holds `text` only "
        "and the whole result is behind `refs` (read it with `thread/context/read`).",
    )


class ToolCallResult(OpenModel):
    """The MCP `CallToolResult` (`content` complete, `structuredContent` of any JSON type) plus its `projection`;
    `isError: true` is a result, not a JSON-RPC error."""

    content: list[ContentBlock] = Field(description="What the tool returned, complete, for a host to render.")
    structured_content: Any = Field(
        default=None, description="The tool's structured result (any JSON), checked against its `outputSchema`."
    )
    is_error: bool | None = Field(default=None, description="The tool reports a failure (still a result).")
    meta: dict[str, Any] | None = Field(
        default=None, alias="_meta", description="Metadata the server attached (MCP `_meta`)."
    )
    projection: Projection = Field(description="The result as a model is given it.")


class ToolProgress(WireModel):
    """`mcpServer/tool/progress`: sent only to the connection whose call it is."""

    thread_id: str = Field(description="The thread of the call.")
    turn_id: str | None = Field(description="The call's `turnId`, or null.")
    request_id: str | int = Field(description="The JSON-RPC id of the `mcpServer/tool/call` request.")
    server: str = Field(description="The server running the tool.")
    tool: str = Field(description="The tool's name on that server.")
    progress: float = Field(description="How far it is; grows with each notification.")
    total: float | None = Field(default=None, description="The value `progress` reaches at the end, when known.")
    message: str | None = Field(default=None, description="What it is doing, in plain words.")


class ToolsUpdated(WireModel):
    """`mcp:tools_updated`: the server's catalog was refreshed."""

    server: str = Field(description="The server whose tools changed.")
    thread_id: str | None = Field(description="The thread whose catalog it is, or null for the management one.")
