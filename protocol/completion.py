"""`mcpServer/completion/complete`: values a server suggests for a prompt's or resource template's argument as the
user types (MCP `completion/complete`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from protocol.base import WireModel


class PromptRef(WireModel):
    """A prompt, by name."""

    type: Literal["prompt"] = Field(description="Always `prompt`.")
    name: str = Field(min_length=1, max_length=1024, description="The prompt's name on its server.")


class ResourceTemplateRef(WireModel):
    """A resource template, by its URI template."""

    type: Literal["resource"] = Field(description="Always `resource`.")
    uri: str = Field(min_length=1, max_length=8192, description="The template's `uriTemplate`.")


class CompletionArgument(WireModel):
    """The argument being typed and what has been typed so far."""

    name: str = Field(min_length=1, max_length=1024, description="The argument's name.")
    value: str = Field(max_length=65_536, description="Its value so far.")


class CompletionContext(WireModel):
    """Arguments already filled, which a server may use to narrow its suggestions."""

    arguments: dict[str, str] | None = Field(default=None, description="The other arguments' values, by name.")


class CompletionParams(WireModel):
    """`mcpServer/completion/complete`: suggestions for one argument, from the management connection or a thread's."""

    server: str = Field(description="The server that offers the prompt or template.")
    thread_id: str | None = Field(default=None, description="Ask through this thread's connection; else management.")
    ref: Annotated[PromptRef | ResourceTemplateRef, Field(discriminator="type")] = Field(
        description="The prompt or resource template whose argument it is."
    )
    argument: CompletionArgument = Field(description="The argument and its value so far.")
    context: CompletionContext | None = Field(default=None, description="The arguments already filled.")


class CompletionResult(WireModel):
    """The server's suggestions (none from a server without the `completions` capability)."""

    values: list[str] = Field(max_length=100, description="Suggested values, best first (at most 100).")
    total: int | None = Field(default=None, description="How many there are in all, when the server says.")
    has_more: bool = Field(description="More exist than were sent.")
