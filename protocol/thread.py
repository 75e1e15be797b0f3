"""The ``thread/*`` namespace and the per-thread read model (diagnostics facts)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from protocol.base import PageParams, WireModel, required_in_schema
from protocol.config import McpServerConfig


class Thread(WireModel):
    """A thread: the owner of runtime MCP work (tool calls run in one), durable across daemon restarts."""

    id: str = Field(description="The thread's id.")
    name: str = Field(description="Its name.")
    cwd: str | None = Field(description="Its working directory, or null for none.")
    created_at: str = Field(description="When it was started (ISO 8601).")
    status: Literal["active", "archived"] = Field(description="`archived` threads refuse new work (`threadArchived`).")
    servers: list[str] = Field(description="The names of the servers it uses.")


class ThreadStartParams(WireModel):
    """`thread/start`: a new thread with its server set; its servers connect in the background."""

    cwd: str | None = Field(default=None, description="Its working directory; absent: none.")
    name: str | None = Field(default=None, max_length=256, description="Its name.")
    mcp_servers: dict[str, McpServerConfig] | None = Field(
        default=None, description="Servers of this thread only, by name, merged with the app's."
    )
    strict_mcp_config: bool = Field(default=False, description="Use no app server, only `mcpServers`.")
    servers: list[str] | None = Field(default=None, description="Only these enabled app servers; absent: all of them.")
    allowed_tools: list[str] | None = Field(
        default=None, description="Globs on full tool names: only matching tools may be seen or called."
    )
    disabled_tools: list[str] | None = Field(
        default=None, description="Globs on full tool names: matching tools may never be seen or called."
    )


class ServerInstructions(WireModel):
    """A server's `instructions`, as data for the host (which decides whether a model sees them)."""

    instructions: str = Field(description="What the server says about how to use it (at most 8 KiB).")
    instructions_truncated: bool | None = Field(default=None, description="`true` when cut to 8 KiB.")


class ThreadResult(WireModel):
    """The thread as it is now."""

    thread: Thread = Field(description="The thread.")
    instructions: dict[str, ServerInstructions] | None = Field(
        default=None,
        description="`thread/start`: the `instructions` of the thread's servers already known to the daemon (from "
        "their management connections), by server name; a thread's own status rows carry them once connected.",
    )


class ThreadListParams(PageParams):
    """`thread/list`: the threads, a page at a time."""


class ThreadListResult(WireModel):
    """One page of threads."""

    data: list[Thread] = Field(description="The threads.")
    next_cursor: str | None = Field(default=None, description="Pass as `cursor` for the next page; absent at the end.")


class ThreadIdParams(WireModel):
    """A request about one thread.

    ``threadId`` is required; the model accepts its absence so that it gets the typed ``threadRequired``.
    """

    model_config = ConfigDict(json_schema_extra=required_in_schema("threadId"))

    thread_id: str | None = None


class ContentRef(WireModel):
    """The digest of one content of a resource read (never the content itself)."""

    index: int = Field(description="Its position in the read's `contents`.")
    bytes: int = Field(description="Its size in bytes.")
    sha256: str = Field(description="Its SHA-256, hex.")


class ResourceReadFact(WireModel):
    """What a thread-scoped resource read leaves behind: digests and refs, never the body."""

    kind: Literal["mcpResourceRead"] = Field(default="mcpResourceRead", description="Always `mcpResourceRead`.")
    server: str = Field(description="The server read from.")
    uri_digest: str = Field(description="The SHA-256 of the URI, hex.")
    uri_preview: str = Field(description="The URI's first 120 characters.")
    mime_types: list[str] = Field(description="The MIME types of the contents.")
    content_refs: list[ContentRef] = Field(description="A digest of each content (of the first 64 only).")
    content_count: int | None = Field(
        default=None, description="How many contents the read returned, when a fact keeps fewer refs than that."
    )
    at: str = Field(description="When it was read (ISO 8601).")


class ThreadReadParams(ThreadIdParams):
    """``thread/read``: a thread and one page of its facts (oldest first)."""

    cursor: str | None = Field(default=None, description="Where to continue: the `nextCursor` of the previous page.")
    limit: int | None = Field(default=None, ge=1, le=1000, description="The most facts to return in this page.")


class ThreadReadResult(WireModel):
    """A thread and its diagnostics facts."""

    thread: Thread = Field(description="The thread.")
    facts: list[ResourceReadFact] = Field(
        description="One page of what its resource reads left behind, oldest first (100 unless `limit` says)."
    )
    next_cursor: str | None = Field(default=None, description="The `cursor` of the next page of facts, if any.")
    facts_truncated: bool = Field(
        default=False,
        description="The thread's facts reached their cap (1 MiB): reads after that left no fact.",
    )


CONTEXT_READ_DEFAULT_BYTES = 64 * 1024
CONTEXT_READ_MAX_BYTES = 1024 * 1024


class ContextReadParams(WireModel):
    """``thread/context/read``: one byte range of an archived projection or blob (offsets count stored bytes)."""

    thread_id: str | None = Field(default=None, description="The thread whose archive holds the ref.")
    ref: str = Field(max_length=128, description="A `ref` of a tool result's `projection`.")
    offset: int = Field(default=0, ge=0, description="The first stored byte to read.")
    limit: int = Field(
        default=CONTEXT_READ_DEFAULT_BYTES, ge=1, le=CONTEXT_READ_MAX_BYTES, description="The most bytes to read."
    )


class ContextReadResult(WireModel):
    """``data`` is text for a ``text`` ref, base64 of the byte range for a blob; ``nextOffset`` null at the end."""

    ref: str = Field(description="The ref read.")
    offset: int = Field(description="The first byte read.")
    data: str = Field(description="The bytes read: text, or base64 for a blob.")
    next_offset: int | None = Field(description="Where the next range starts, or null at the end.")
    bytes: int = Field(description="The ref's whole stored size.")
    mime_type: str | None = Field(default=None, description="Its MIME type, when known.")
