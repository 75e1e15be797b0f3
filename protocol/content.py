"""MCP objects as they cross to clients: content blocks, resource contents, prompt messages, tool annotations.

They mirror the MCP specification's shapes (as the SDK has already checked them) and keep every field a server adds
beyond those (``OpenModel``), so a client sees what the server sent, typed where MCP defines it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from typing_extensions import TypeAliasType

from protocol.base import OpenModel

Role = Literal["user", "assistant"]

_META = "Metadata the server attached (MCP `_meta`), passed through unchanged."


class Annotations(OpenModel):
    """Hints a server gives about how content is meant to be used or shown."""

    audience: list[Role] | None = Field(default=None, description="Who the content is for.")
    priority: float | None = Field(default=None, description="How important it is, from 0 (optional) to 1 (required).")
    last_modified: str | None = Field(default=None, description="When it last changed (ISO 8601).")


class Icon(OpenModel):
    """An icon a user interface may show for a server, tool, prompt or resource."""

    src: str = Field(description="An `http(s):` or `data:` URI of the image; load it only from a trusted origin.")
    mime_type: str | None = Field(default=None, description="The image's MIME type, when the URI does not tell.")
    sizes: list[str] | None = Field(default=None, description='Sizes it is available in: `"48x48"` or `"any"`.')
    theme: Literal["light", "dark"] | None = Field(default=None, description="The theme it is drawn for.")


class TextContent(OpenModel):
    """A block of text."""

    type: Literal["text"] = Field(description="Always `text`.")
    text: str = Field(description="The text.")
    annotations: Annotations | None = Field(default=None, description="How the block is meant to be used.")
    meta: dict[str, Any] | None = Field(default=None, alias="_meta", description=_META)


class ImageContent(OpenModel):
    """An image, base64-encoded."""

    type: Literal["image"] = Field(description="Always `image`.")
    data: str = Field(description="The image bytes, base64-encoded.")
    mime_type: str = Field(description="The image's MIME type.")
    annotations: Annotations | None = Field(default=None, description="How the block is meant to be used.")
    meta: dict[str, Any] | None = Field(default=None, alias="_meta", description=_META)


class AudioContent(OpenModel):
    """Audio, base64-encoded."""

    type: Literal["audio"] = Field(description="Always `audio`.")
    data: str = Field(description="The audio bytes, base64-encoded.")
    mime_type: str = Field(description="The audio's MIME type.")
    annotations: Annotations | None = Field(default=None, description="How the block is meant to be used.")
    meta: dict[str, Any] | None = Field(default=None, alias="_meta", description=_META)


class Resource(OpenModel):
    """A resource a server can read."""

    uri: str = Field(description="Its URI, as `mcpServer/resource/read` takes it.")
    name: str = Field(description="Its programmatic name.")
    title: str | None = Field(default=None, description="A name to show to people.")
    description: str | None = Field(default=None, description="What the resource is.")
    mime_type: str | None = Field(default=None, description="Its MIME type, when known.")
    size: int | None = Field(default=None, description="Its size in bytes before any encoding, when known.")
    icons: list[Icon] | None = Field(default=None, description="Icons to show for it.")
    annotations: Annotations | None = Field(default=None, description="How it is meant to be used.")
    meta: dict[str, Any] | None = Field(default=None, alias="_meta", description=_META)


class ResourceTemplate(OpenModel):
    """A family of resources a server can read, named by a URI template."""

    uri_template: str = Field(description="An RFC 6570 URI template; fill it in to get a URI to read.")
    name: str = Field(description="Its programmatic name.")
    title: str | None = Field(default=None, description="A name to show to people.")
    description: str | None = Field(default=None, description="What the resources are.")
    mime_type: str | None = Field(default=None, description="The MIME type of every matching resource, when shared.")
    icons: list[Icon] | None = Field(default=None, description="Icons to show for it.")
    annotations: Annotations | None = Field(default=None, description="How they are meant to be used.")
    meta: dict[str, Any] | None = Field(default=None, alias="_meta", description=_META)


class ResourceLink(Resource):
    """A link to a resource the server can read (with `mcpServer/resource/read`); not necessarily listed."""

    type: Literal["resource_link"] = Field(description="Always `resource_link`.")


class TextResourceContents(OpenModel):
    """The text of a resource."""

    uri: str = Field(description="The URI of the resource this is the content of.")
    mime_type: str | None = Field(default=None, description="Its MIME type, when known.")
    text: str = Field(description="The text.")
    meta: dict[str, Any] | None = Field(default=None, alias="_meta", description=_META)


class BlobResourceContents(OpenModel):
    """The bytes of a binary resource, base64-encoded."""

    uri: str = Field(description="The URI of the resource this is the content of.")
    mime_type: str | None = Field(default=None, description="Its MIME type, when known.")
    blob: str = Field(description="The bytes, base64-encoded.")
    meta: dict[str, Any] | None = Field(default=None, alias="_meta", description=_META)


class EmbeddedResource(OpenModel):
    """A resource's content placed inside a tool result or a prompt message."""

    type: Literal["resource"] = Field(description="Always `resource`.")
    resource: TextResourceContents | BlobResourceContents = Field(description="The content: text or a blob.")
    annotations: Annotations | None = Field(default=None, description="How the block is meant to be used.")
    meta: dict[str, Any] | None = Field(default=None, alias="_meta", description=_META)


ContentBlock = TypeAliasType(
    "ContentBlock",
    Annotated[
        TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource,
        Field(discriminator="type", description="One block of a tool result or prompt message, by `type`."),
    ],
)


class PromptMessage(OpenModel):
    """One message of a prompt, in the order it is to be presented."""

    role: Role = Field(description="Who says it.")
    content: ContentBlock = Field(description="What is said: one content block.")


class PromptArgument(OpenModel):
    """An argument a prompt takes (all prompt arguments are strings)."""

    name: str = Field(description="The argument's name, the key in `mcpPrompt/get`'s `arguments`.")
    title: str | None = Field(default=None, description="A name to show to people.")
    description: str | None = Field(default=None, description="What the argument means.")
    required: bool | None = Field(default=None, description="Whether the prompt needs it.")


class ToolAnnotations(OpenModel):
    """Hints about a tool's behaviour. They come from the server and grant nothing: never base an approval on them."""

    title: str | None = Field(default=None, description="A name to show to people.")
    read_only_hint: bool | None = Field(default=None, description="The tool does not change its environment.")
    destructive_hint: bool | None = Field(default=None, description="The tool may delete or overwrite things.")
    idempotent_hint: bool | None = Field(
        default=None, description="Calling it again with the same arguments changes nothing more."
    )
    open_world_hint: bool | None = Field(default=None, description="The tool reaches outside systems (the web, say).")


class Implementation(OpenModel):
    """Who a connected MCP server says it is (its `initialize` answer)."""

    name: str = Field(description="The server's programmatic name.")
    version: str = Field(description="Its version.")
    title: str | None = Field(default=None, description="A name to show to people.")
    description: str | None = Field(default=None, description="What the server does.")
    website_url: str | None = Field(default=None, description="Its web site.")
    icons: list[Icon] | None = Field(default=None, description="Icons to show for it.")


class ListChangedCapability(OpenModel):
    """A feature the server has, and whether it says when its list changes."""

    list_changed: bool | None = Field(default=None, description="The server notifies when the list changes.")


class ResourcesCapability(ListChangedCapability):
    """The server's resources, and whether it supports subscriptions to them."""

    subscribe: bool | None = Field(default=None, description="Its resources can be subscribed to.")


class ServerCapabilities(OpenModel):
    """What a connected MCP server says it supports; an absent feature is not supported."""

    tools: ListChangedCapability | None = Field(default=None, description="It has tools.")
    prompts: ListChangedCapability | None = Field(default=None, description="It has prompts.")
    resources: ResourcesCapability | None = Field(default=None, description="It has resources.")
    logging: dict[str, Any] | None = Field(default=None, description="It sends log messages.")
    completions: dict[str, Any] | None = Field(default=None, description="It completes arguments.")
    experimental: dict[str, Any] | None = Field(default=None, description="Non-standard features, by name.")
