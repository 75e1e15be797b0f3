"""The ``mcpResource/*`` namespace, ``mcpServer/resource/read`` and the resource notifications."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ConfigDict, Field, field_validator

from protocol.apps import csp_origins
from protocol.base import OpenModel, WireModel
from protocol.content import Resource, ResourceTemplate

_THREAD = "Use this thread's connection (and wait for its servers to start); else the management one."
_META = "Metadata the server attached (MCP `_meta`)."
_log = logging.getLogger(__name__)


class ResourceListParams(WireModel):
    """`mcpResource/list`: the resources and templates of every connected server, or of one."""

    server: str | None = Field(default=None, description="Only this server's resources.")
    thread_id: str | None = Field(default=None, description=_THREAD)
    cursor: str | None = Field(default=None, description="Where to continue: the `nextCursor` of the previous page.")


class ResourceView(Resource):
    """A resource a server lists, with the server it comes from."""

    server: str = Field(description="The server that lists it.")


class ResourceTemplateView(ResourceTemplate):
    """A resource template a server lists, with the server it comes from."""

    server: str = Field(description="The server that lists it.")


class ResourceListResult(WireModel):
    """One page of resources and templates."""

    resources: list[ResourceView] = Field(description="The resources, by server name.")
    resource_templates: list[ResourceTemplateView] = Field(description="The resource templates, by server name.")
    next_cursor: str | None = Field(default=None, description="Pass as `cursor` for the next page; absent at the end.")


class ResourceReadParams(WireModel):
    """`mcpServer/resource/read`: read a resource (through a thread, a diagnostics fact is recorded)."""

    server: str = Field(description="The server to read from.")
    uri: str = Field(description="The resource's URI.")
    thread_id: str | None = Field(default=None, description=_THREAD)
    preview: bool = Field(
        default=False, description="Cut each text to 16 KiB (`truncated`) and replace each blob by its size and digest."
    )


class UiCsp(WireModel):
    """The origins a view may reach, beyond none (`_meta.ui.csp`): each `scheme://host[:port]` with a punycode host,
    a wildcard only as a leading `*.`, never a loopback or private address (other entries are dropped)."""

    model_config = ConfigDict(extra="ignore")

    connect_domains: list[str] | None = Field(default=None, description="Origins of fetch, XHR and WebSocket.")
    resource_domains: list[str] | None = Field(default=None, description="Origins of scripts, styles, images, fonts.")
    frame_domains: list[str] | None = Field(default=None, description="Origins of nested frames.")
    base_uri_domains: list[str] | None = Field(default=None, description="Origins a `<base>` may name.")

    @field_validator("connect_domains", "resource_domains", "frame_domains", "base_uri_domains", mode="before")
    @classmethod
    def _origins_only(cls, entries: object) -> list[str] | None:
        """Each entry an origin (`scheme://host[:port]`, punycode, public): any other is dropped with a note, so no
        host ever puts it into a policy."""
        if entries is None:
            return None
        kept, dropped = csp_origins(entries)
        if dropped:
            note = "a view's _meta.ui.csp named %d entries that are not public origins: %s"
            _log.warning(note, len(dropped), dropped)
        return kept


class UiPermissions(WireModel):
    """Browser permissions a view asks for (`_meta.ui.permissions`), each present when asked."""

    model_config = ConfigDict(extra="ignore")

    camera: dict[str, Any] | None = Field(default=None, description="The camera.")
    microphone: dict[str, Any] | None = Field(default=None, description="The microphone.")
    geolocation: dict[str, Any] | None = Field(default=None, description="The location.")
    clipboard_write: dict[str, Any] | None = Field(default=None, description="Writing to the clipboard.")


class UiResourceMeta(WireModel):
    """How a host renders a `ui://` view (MCP Apps `_meta.ui`)."""

    model_config = ConfigDict(extra="ignore")

    csp: UiCsp | None = Field(default=None, description="The Content-Security-Policy's allowed origins.")
    permissions: UiPermissions | None = Field(default=None, description="Browser permissions it asks for.")
    domain: str | None = Field(default=None, description="The origin it wants to be served from, if any.")
    prefers_border: bool | None = Field(default=None, description="Whether the host should draw a border.")


class ResourceMeta(OpenModel):
    """A resource content's `_meta`: MCP Apps' `ui` typed, every other key as the server sent it."""

    ui: UiResourceMeta | None = Field(default=None, description="A `ui://` view's rendering hints.")


class ResourceContent(OpenModel):
    """One piece of a resource: `text`, `blob` (base64), or with `preview` a blob summary (`blobBytes`, `sha256`)."""

    uri: str = Field(description="The URI this is the content of.")
    mime_type: str | None = Field(default=None, description="Its MIME type, when known.")
    text: str | None = Field(default=None, description="The text, for a text resource.")
    blob: str | None = Field(default=None, description="The bytes, base64-encoded, for a binary resource.")
    truncated: bool | None = Field(default=None, description="With `preview`: the text was cut to 16 KiB.")
    blob_bytes: int | None = Field(
        default=None, description="With `preview`: the blob's size in bytes (the blob itself is left out)."
    )
    sha256: str | None = Field(default=None, description="With `preview`: the blob's SHA-256, hex.")
    meta: ResourceMeta | None = Field(default=None, alias="_meta", description=_META)


class ResourceReadResult(WireModel):
    """What a resource read returned."""

    contents: list[ResourceContent] = Field(description="The resource's contents (several for a composite one).")


class ResourceSubscribeParams(WireModel):
    """`mcpResource/subscribe` and `unsubscribe`: updates arrive as `mcp:resource_updated`."""

    server: str = Field(description="The server of the resource.")
    uri: str = Field(description="The resource's URI.")
    thread_id: str | None = Field(default=None, description="Subscribe through this thread's connection.")


class ResourceUpdated(WireModel):
    """`mcp:resource_updated`: a subscribed resource changed; read it again to see how."""

    server: str = Field(description="The server of the resource.")
    uri: str = Field(description="The resource's URI.")
    thread_id: str | None = Field(description="The thread whose subscription it is, or null for the management one.")


class ResourcesUpdated(WireModel):
    """`mcp:resources_updated`: the server's resource list changed."""

    server: str = Field(description="The server whose list changed.")
    thread_id: str | None = Field(description="The thread whose connection saw it, or null for the management one.")
