"""The ``mcpTool/*`` namespace and ``mcpServer/tool/call`` with its progress notification."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from protocol.base import OpenModel, PageParams, WireModel, required_in_schema


class ToolView(WireModel):
    """A tool as the host sees it: full name ``mcp__<server>__<tool>`` plus visibility flags."""

    name: str
    server: str
    tool: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    deferred: bool
    always_visible: bool


class ToolListParams(PageParams):
    server: str | None = None


class ToolListResult(WireModel):
    data: list[ToolView]
    next_cursor: str | None = None


class ToolListForContextParams(WireModel):
    thread_id: str | None = None
    caller: str | None = None
    include_deferred: bool = False


class ToolListForContextResult(WireModel):
    data: list[ToolView]


class ToolSearchParams(WireModel):
    query: str = Field(max_length=4096)
    limit: int = Field(default=10, ge=1, le=100)
    thread_id: str | None = None
    caller: str | None = None


class ToolSearchResult(WireModel):
    data: list[ToolView]
    missing: list[str] | None = None


class ToolCallParams(WireModel):
    """``threadId`` is required; the model accepts its absence so that it gets the typed ``threadRequired``."""

    model_config = ConfigDict(json_schema_extra=required_in_schema("threadId"))

    thread_id: str | None = None
    turn_id: str | None = None
    server: str
    tool: str
    arguments: dict[str, Any] | None = None
    timeout_ms: int | None = Field(default=None, ge=1, le=300_000)
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ProjectionRef(WireModel):
    """One archived piece of a result: the full projection text (``text``) or a media/embedded blob."""

    ref: str
    kind: Literal["text", "image", "audio", "resource"]
    mime_type: str | None = None
    bytes: int
    sha256: str


class Projection(WireModel):
    """What a model is given: at most 16 KiB of text; larger text and every blob behind a ``ref``."""

    text: str
    truncated: bool
    refs: list[ProjectionRef]


class ToolCallResult(OpenModel):
    """The MCP ``CallToolResult`` (``content`` complete, ``structuredContent`` of any JSON type) plus its
    ``projection``; ``isError: true`` is a result, not a JSON-RPC error."""

    content: list[dict[str, Any]]
    structured_content: Any = None
    is_error: bool | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")
    projection: Projection


class ToolProgress(WireModel):
    """``mcpServer/tool/progress``: sent only to the connection whose call it is."""

    thread_id: str
    turn_id: str | None
    request_id: str | int
    server: str
    tool: str
    progress: float
    total: float | None = None
    message: str | None = None


class ToolsUpdated(WireModel):
    """``mcp:tools_updated``: the server's catalog was refreshed."""

    server: str
    thread_id: str | None
