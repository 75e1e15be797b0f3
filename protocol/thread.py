"""The ``thread/*`` namespace and the per-thread read model (diagnostics facts)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from protocol.base import PageParams, WireModel, required_in_schema
from protocol.config import McpServerConfig


class Thread(WireModel):
    id: str
    name: str
    cwd: str | None
    created_at: str
    status: Literal["active", "archived"]
    servers: list[str]


class ThreadStartParams(WireModel):
    cwd: str | None = None
    name: str | None = Field(default=None, max_length=256)
    mcp_servers: dict[str, McpServerConfig] | None = None
    strict_mcp_config: bool = False
    servers: list[str] | None = None
    allowed_tools: list[str] | None = None
    disabled_tools: list[str] | None = None


class ThreadResult(WireModel):
    thread: Thread


class ThreadListParams(PageParams):
    pass


class ThreadListResult(WireModel):
    data: list[Thread]
    next_cursor: str | None = None


class ThreadIdParams(WireModel):
    """``threadId`` is required; the model accepts its absence so that it gets the typed ``threadRequired``."""

    model_config = ConfigDict(json_schema_extra=required_in_schema("threadId"))

    thread_id: str | None = None


class ContentRef(WireModel):
    index: int
    bytes: int
    sha256: str


class ResourceReadFact(WireModel):
    """What a thread-scoped resource read leaves behind: digests and refs, never the body."""

    kind: Literal["mcpResourceRead"] = "mcpResourceRead"
    server: str
    uri_digest: str
    uri_preview: str
    mime_types: list[str]
    content_refs: list[ContentRef]
    at: str


class ThreadReadResult(WireModel):
    thread: Thread
    facts: list[ResourceReadFact]


CONTEXT_READ_DEFAULT_BYTES = 64 * 1024
CONTEXT_READ_MAX_BYTES = 1024 * 1024


class ContextReadParams(WireModel):
    """``thread/context/read``: one byte range of an archived projection or blob (offsets count stored bytes)."""

    thread_id: str | None = None
    ref: str = Field(max_length=128)
    offset: int = Field(default=0, ge=0)
    limit: int = Field(default=CONTEXT_READ_DEFAULT_BYTES, ge=1, le=CONTEXT_READ_MAX_BYTES)


class ContextReadResult(WireModel):
    """``data`` is text for a ``text`` ref, base64 of the byte range for a blob; ``nextOffset`` null at the end."""

    ref: str
    offset: int
    data: str
    next_offset: int | None
    bytes: int
    mime_type: str | None = None
