"""What a resource read returns (typed; as a preview; an MCP Apps view whole), and what a thread-scoped read leaves
behind (digests only)."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from mcp_runtime.limits import MAX_VIEW_BYTES
from protocol.jsonrpc import AppError
from protocol.resource import ResourceContent, ResourceReadResult
from protocol.thread import ContentRef, ResourceReadFact

PREVIEW_TEXT_BYTES = 16 * 1024
URI_PREVIEW_CHARS = 120
UI_SCHEME = "ui://"


def view_too_large(server: str, uri: str, size: int | None) -> AppError:
    """A view is handed over whole or not at all: one over ``MAX_VIEW_BYTES`` (or a message past the transport's
    cap) is ``resourceTooLarge``, never a preview's cut, which would render broken."""
    weight = f"{size} bytes" if size is not None else "larger than a server message may be"
    message = f"the view {uri[:200]} is {weight}, over the {MAX_VIEW_BYTES}-byte limit for a view"
    sized = {"size": size} if size is not None else {}
    return AppError("resourceTooLarge", message, limit=MAX_VIEW_BYTES, server=server, **sized)


def checked_view(server: str, uri: str, contents: Sequence[dict[str, Any]]) -> None:
    """A view read whole is refused past ``MAX_VIEW_BYTES`` (its text's UTF-8 bytes, or its blob's decoded size)."""
    size = 0
    for content in contents:
        if isinstance(text := content.get("text"), str):
            size += len(text) if text.isascii() else len(text.encode("utf-8", errors="replace"))
        elif isinstance(blob := content.get("blob"), str):
            size += len(blob) * 3 // 4
    if size > MAX_VIEW_BYTES:
        raise view_too_large(server, uri, size)


def typed_contents(server: str, contents: Sequence[dict[str, Any]]) -> ResourceReadResult:
    """The read's answer, MCP Apps ``_meta.ui`` typed: a view whose rendering hints (its CSP) do not parse is
    ``invalidOutput``, never rendered with hints guessed."""
    from pydantic import ValidationError

    try:
        return ResourceReadResult(contents=[ResourceContent.model_validate(c) for c in contents])
    except ValidationError as exc:
        detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        raise AppError("invalidOutput", f"the server sent a resource that does not parse: {detail}"[:1000],
                       server=server, detail=detail[:300]) from None  # fmt: skip


def preview_content(content: dict[str, Any]) -> dict[str, Any]:
    """Text cut to 16 KiB (``truncated``); a blob replaced by its size and digest."""
    if "blob" in content:
        raw = base64.b64decode(content["blob"])
        summary = {k: v for k, v in content.items() if k != "blob"}
        return {**summary, "blobBytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
    text = content.get("text") or ""
    encoded = text.encode()
    if len(encoded) <= PREVIEW_TEXT_BYTES:
        return content
    return {**content, "text": encoded[:PREVIEW_TEXT_BYTES].decode(errors="ignore"), "truncated": True}


def resource_read_fact(server: str, uri: str, contents: Sequence[dict[str, Any]]) -> ResourceReadFact:
    """What a thread-scoped read leaves behind: digests, sizes and MIME types, never the text or blob."""
    refs: list[ContentRef] = []
    mime_types: list[str] = []
    for index, content in enumerate(contents):
        if "blob" in content:
            raw = base64.b64decode(content.get("blob") or "")
        else:
            raw = str(content.get("text") or "").encode()
        refs.append(ContentRef(index=index, bytes=len(raw), sha256=hashlib.sha256(raw).hexdigest()))
        mime = content.get("mimeType")
        if isinstance(mime, str) and mime not in mime_types:
            mime_types.append(mime)
    return ResourceReadFact(
        server=server,
        uri_digest=hashlib.sha256(uri.encode()).hexdigest(),
        uri_preview=uri[:URI_PREVIEW_CHARS],
        mime_types=mime_types,
        content_refs=refs,
        at=datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    )
