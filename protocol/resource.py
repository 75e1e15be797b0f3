"""The ``mcpResource/*`` namespace, ``mcpServer/resource/read`` and the resource notifications."""

from __future__ import annotations

from protocol.base import OpenModel, WireModel


class ResourceListParams(WireModel):
    server: str | None = None
    thread_id: str | None = None
    cursor: str | None = None


class ResourceView(OpenModel):
    server: str
    uri: str
    name: str


class ResourceTemplateView(OpenModel):
    server: str
    uri_template: str
    name: str


class ResourceListResult(WireModel):
    resources: list[ResourceView]
    resource_templates: list[ResourceTemplateView]
    next_cursor: str | None = None


class ResourceReadParams(WireModel):
    server: str
    uri: str
    thread_id: str | None = None
    preview: bool = False


class ResourceContent(OpenModel):
    """Text, blob, or (with ``preview``) a blob summary ``{blobBytes, sha256}``."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None
    truncated: bool | None = None
    blob_bytes: int | None = None
    sha256: str | None = None


class ResourceReadResult(WireModel):
    contents: list[ResourceContent]


class ResourceSubscribeParams(WireModel):
    server: str
    uri: str
    thread_id: str | None = None


class ResourceUpdated(WireModel):
    """``mcp:resource_updated``."""

    server: str
    uri: str
    thread_id: str | None


class ResourcesUpdated(WireModel):
    """``mcp:resources_updated``: the server's resource list changed."""

    server: str
    thread_id: str | None


