"""The projection of a tool result: what a model is given instead of the raw ``content`` (SPEC §4).

Pure functions, no I/O. A result becomes (1) the media it carries — every image, audio and embedded-resource
blob, decoded to bytes, each to be archived behind a ``ref`` — and (2) one projection text: the texts alone
(``text/plain``) when the result is only text, else a compact JSON document (``application/json``) of its
text, resource links, embedded text resources, ``structuredContent`` (any JSON type) and ``isError``, with each
blob replaced by ``{ref, mimeType, bytes}``. A projection text over 16 KiB is cut (on a character boundary) and
archived whole behind a ``text`` ref.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

PROJECTION_TEXT_BYTES = 16 * 1024
TEXT_MIME = "text/plain; charset=utf-8"
JSON_MIME = "application/json"

Kind = Literal["text", "image", "audio", "resource"]


@dataclass(frozen=True)
class Media:
    """One blob of a result's ``content`` (by index), decoded to the bytes the archive stores."""

    index: int
    kind: Kind
    mime_type: str | None
    data: bytes


@dataclass(frozen=True)
class Stored:
    """An archived piece as the projection names it."""

    ref: str
    kind: Kind
    mime_type: str | None
    bytes: int
    sha256: str

    def view(self) -> dict[str, Any]:
        view: dict[str, Any] = {"ref": self.ref, "kind": self.kind}
        if self.mime_type is not None:
            view["mimeType"] = self.mime_type
        return {**view, "bytes": self.bytes, "sha256": self.sha256}


def stored(ref: str, kind: Kind, mime_type: str | None, data: bytes) -> Stored:
    return Stored(ref, kind, mime_type, len(data), hashlib.sha256(data).hexdigest())


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


def projection_text(result: Mapping[str, Any], refs: Mapping[int, Stored]) -> tuple[str, str]:
    """The whole projection text and its MIME type; ``refs`` maps content indexes to their archived blobs."""
    content: list[dict[str, Any]] = list(result.get("content") or [])
    if _text_only(result):
        return "\n".join(str(item.get("text", "")) for item in content), TEXT_MIME
    document: dict[str, Any] = {"content": [_projected_item(item, refs.get(i)) for i, item in enumerate(content)]}
    if "structuredContent" in result:
        document["structuredContent"] = result["structuredContent"]
    if result.get("isError"):
        document["isError"] = True
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False), JSON_MIME


def utf8(text: str) -> bytes:
    """The stored form of a projection text (a lone surrogate a server sent becomes ``?``, never an error)."""
    return text.encode("utf-8", errors="replace")


def clip(text: str, limit: int = PROJECTION_TEXT_BYTES) -> tuple[str, bool]:
    """At most ``limit`` UTF-8 bytes of ``text``, cut on a character boundary; True when cut."""
    encoded = utf8(text)
    if len(encoded) <= limit:
        return text, False
    return encoded[:limit].decode(errors="ignore"), True
