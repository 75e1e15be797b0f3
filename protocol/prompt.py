"""The ``mcpPrompt/*`` namespace."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from protocol.base import OpenModel, WireModel
from protocol.content import Icon, PromptArgument, PromptMessage

_THREAD = "Read through this thread's connection (and wait for its servers to start); else the management one."


class PromptListParams(WireModel):
    """`mcpPrompt/list`: the prompts of every connected server, or of one."""

    server: str | None = Field(default=None, description="Only this server's prompts.")
    thread_id: str | None = Field(default=None, description=_THREAD)
    cursor: str | None = Field(default=None, description="Where to continue: the `nextCursor` of the previous page.")


class PromptView(OpenModel):
    """A prompt a server offers, with the server it comes from."""

    server: str = Field(description="The server that offers it.")
    name: str = Field(description="The prompt's name, as `mcpPrompt/get` takes it.")
    title: str | None = Field(default=None, description="A name to show to people.")
    description: str | None = Field(default=None, description="What the prompt is for.")
    arguments: list[PromptArgument] = Field(description="The arguments it takes (empty when none).")
    icons: list[Icon] | None = Field(default=None, description="Icons to show for it.")
    meta: dict[str, Any] | None = Field(
        default=None, alias="_meta", description="Metadata the server attached (MCP `_meta`)."
    )


class PromptListResult(WireModel):
    """One page of prompts."""

    data: list[PromptView] = Field(description="The prompts, by server name.")
    next_cursor: str | None = Field(default=None, description="Pass as `cursor` for the next page; absent at the end.")


class PromptGetParams(WireModel):
    """`mcpPrompt/get`: a prompt's messages with its arguments filled in."""

    server: str = Field(description="The server that offers the prompt.")
    name: str = Field(description="The prompt's name.")
    arguments: dict[str, str] | None = Field(default=None, description="The argument values, by name.")
    thread_id: str | None = Field(default=None, description=_THREAD)


class PromptGetResult(OpenModel):
    """The prompt as the server rendered it."""

    description: str | None = Field(default=None, description="What the prompt is for.")
    messages: list[PromptMessage] = Field(description="The messages, in order.")
