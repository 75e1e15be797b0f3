"""A tool result as the thread gives it back (SPEC §4): ``content`` complete for hosts, and a ``projection`` for
a model, where every blob and any text over the projection's size sits behind an archive ``ref``.

Pure functions, no I/O (the thread runtime archives the entries): the projection text is the texts alone when
the result is only text, else a compact JSON document of everything but the blobs, so a model sees the
structure of the result without its bulk.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcp_runtime.storage.archive import Kind, Stored, stored
from protocol.constants import MAX_OUTPUT_LINE_BYTES
from protocol.encoding import compact

PROJECTION_TEXT_BYTES = 16 * 1024
MAX_ANSWER_BYTES = MAX_OUTPUT_LINE_BYTES - 64 * 1024
"""The longest tool call answer carried whole (the rest of the line is the response's envelope)."""
TEXT_MIME = "text/plain; charset=utf-8"
JSON_MIME = "application/json"


@dataclass(frozen=True)
class Media:
    """One blob of a result's ``content`` (by index), decoded to the bytes the archive stores."""

    index: int
    kind: Kind
    mime_type: str | None
    data: bytes


def _decode(blob: Any) -> bytes:
    """Base64 as sent; a server's malformed base64 is kept as its literal characters rather than lost."""
    text = blob if isinstance(blob, str) else ""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return text.encode()


def _mime(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def media(content: list[dict[str, Any]]) -> list[Media]:
    """Every image, audio and embedded-resource blob, in content order."""
    found: list[Media] = []
    for index, item in enumerate(content):
        kind = item.get("type")
        if kind in ("image", "audio"):
            found.append(Media(index, kind, _mime(item.get("mimeType")), _decode(item.get("data"))))
        elif kind == "resource":
            resource = item.get("resource")
            if isinstance(resource, dict) and "blob" in resource:
                found.append(Media(index, "resource", _mime(resource.get("mimeType")), _decode(resource["blob"])))
    return found


def _projected_item(item: dict[str, Any], ref: Stored | None) -> dict[str, Any]:
    if ref is None:
        return item
    kind = item.get("type")
    projected: dict[str, Any] = {"type": kind}
    if kind == "resource":
        resource = item.get("resource")
        uri = resource.get("uri") if isinstance(resource, dict) else None
        if uri is not None:
            projected["uri"] = uri
    projected["ref"] = ref.ref
    if ref.mime_type is not None:
        projected["mimeType"] = ref.mime_type
    projected["bytes"] = ref.bytes
    return projected


def _text_only(result: Mapping[str, Any]) -> bool:
    content = result.get("content") or []
    return "structuredContent" not in result and all(item.get("type") == "text" for item in content)


def projection_bytes(result: Mapping[str, Any], refs: Mapping[int, Stored]) -> tuple[bytes, str]:
    """The whole projection as stored (UTF-8) and its MIME type; ``refs`` maps content indexes to their archived
    blobs. Made once as bytes: a result of tens of MiB is not copied again to be clipped and archived."""
    content: list[dict[str, Any]] = list(result.get("content") or [])
    if _text_only(result):
        return utf8("\n".join(str(item.get("text", "")) for item in content)), TEXT_MIME
    document: dict[str, Any] = {"content": [_projected_item(item, refs.get(i)) for i, item in enumerate(content)]}
    if "structuredContent" in result:
        document["structuredContent"] = result["structuredContent"]
    if result.get("isError"):
        document["isError"] = True
    return compact(document), JSON_MIME


def utf8(text: str) -> bytes:
    """The stored form of a projection text (a lone surrogate a server sent becomes ``?``, never an error)."""
    return text.encode("utf-8", errors="replace")


def clip(text: str, limit: int = PROJECTION_TEXT_BYTES) -> tuple[str, bool]:
    """At most ``limit`` UTF-8 bytes of ``text``, cut on a character boundary; True when cut."""
    encoded = utf8(text)
    if len(encoded) <= limit:
        return text, False
    return encoded[:limit].decode(errors="ignore"), True


@dataclass(frozen=True)
class Projected:
    """A result's projection (the ``Projection`` JSON object) and the archive entries its refs name (written
    before the result is returned)."""

    projection: dict[str, Any]
    entries: list[tuple[Stored, bytes]]


def project(result: Mapping[str, Any], new_ref: Callable[[], str]) -> Projected:
    """Every blob, and a projection text over the limit, behind a ref; the model gets the clipped text and refs."""
    blobs = media(result.get("content") or [])
    by_index = {blob.index: stored(new_ref(), blob.kind, blob.mime_type, blob.data) for blob in blobs}
    entries = [(by_index[blob.index], blob.data) for blob in blobs]
    full, mime_type = projection_bytes(result, by_index)
    truncated = len(full) > PROJECTION_TEXT_BYTES
    text = full[:PROJECTION_TEXT_BYTES].decode(errors="ignore") if truncated else full.decode()
    if truncated:
        entries.append((stored(new_ref(), "text", mime_type, full), full))
    return Projected({"text": text, "truncated": truncated, "refs": [meta.view() for meta, _ in entries]}, entries)


def unarchived(result: Mapping[str, Any]) -> dict[str, Any]:
    """The projection of a result whose archive entries could not be written (the disk is full): the clipped text
    with no refs, marked, so that the call still answers with its complete ``content``."""
    full, _ = projection_bytes(result, {})
    text = full[:PROJECTION_TEXT_BYTES].decode(errors="ignore")
    return {"text": text, "truncated": True, "refs": [], "archiveError": "storageFull"}


_DECLARED = ("content", "structuredContent", "isError", "_meta")
"""``ToolCallResult``'s members before ``projection``, in its order; any other member of a result follows it."""


def tool_call_json(result: Mapping[str, Any], projection: dict[str, Any]) -> bytes:
    """The ``ToolCallResult`` JSON of ``result`` with ``projection``: byte for byte what
    ``ToolCallResult.model_validate(...).model_dump_json()`` writes (``tests/threads/test_results.py`` proves it), but
    written by the house's encoder without building the model, which is many times faster on a large result."""
    document = {key: result[key] for key in _DECLARED if result.get(key) is not None}
    document["projection"] = projection
    document.update((key, value) for key, value in result.items() if key not in _DECLARED and key != "projection")
    return compact(document)


def _weight(result: Mapping[str, Any]) -> int:
    """A lower bound of a result's JSON size, from its texts and blobs alone: cheap, and enough to tell a result
    that can never fit in an answer without encoding it."""
    total = 0
    for item in result.get("content") or []:
        for key in ("text", "data"):
            if isinstance(value := item.get(key), str):
                total += len(value)
        resource = item.get("resource")
        if isinstance(resource, dict):
            total += sum(len(v) for k, v in resource.items() if k in ("text", "blob") and isinstance(v, str))
    return total


def answer_json(result: Mapping[str, Any], projected: Projected) -> bytes:
    """The answer to a tool call: the result whole when it fits in a line a client reads, else (a result of tens of
    MiB, archived whole) its projection alone, ``content`` holding the projection text, marked ``contentOmitted``;
    the complete result is behind the projection's refs."""
    if _weight(result) <= MAX_ANSWER_BYTES:
        answer = tool_call_json(result, projected.projection)
        if len(answer) <= MAX_ANSWER_BYTES:
            return answer
    slim = {key: value for key, value in result.items() if key not in ("content", "structuredContent")}
    slim["content"] = [{"type": "text", "text": projected.projection["text"]}]
    return tool_call_json(slim, {**projected.projection, "contentOmitted": True})
