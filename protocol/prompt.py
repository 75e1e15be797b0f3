"""The ``mcpPrompt/*`` namespace."""

from __future__ import annotations

from typing import Any

from protocol.base import OpenModel, WireModel


class PromptListParams(WireModel):
    server: str | None = None
    thread_id: str | None = None
    cursor: str | None = None


class PromptView(OpenModel):
    server: str
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[dict[str, Any]]


class PromptListResult(WireModel):
    data: list[PromptView]
    next_cursor: str | None = None


class PromptGetParams(WireModel):
    server: str
    name: str
    arguments: dict[str, str] | None = None
    thread_id: str | None = None


class PromptGetResult(OpenModel):
    description: str | None = None
    messages: list[dict[str, Any]]
