"""The tool a thread call runs: found in the server's current list, judged by the server and thread filters and
by MCP Apps visibility, with its schemas compiled once per listed tool object (a refresh replaces the objects)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp_runtime.catalog.names import full_name
from mcp_runtime.catalog.schemas import arguments_validator, validator
from mcp_runtime.catalog.views import build_views, visibility, visible_for_context
from protocol.config import McpServerConfig
from protocol.jsonrpc import AppError
from protocol.status import McpTool
from protocol.tool import Visibility

__all__ = ["ToolSpec", "ToolSpecs"]


@dataclass(frozen=True)
class ToolSpec:
    """One listed tool with the thread's decision about it and its compiled input and output validators."""

    tool: McpTool
    allowed: bool
    visibility: tuple[Visibility, ...]
    input: Any
    output: Any


class ToolSpecs:
    """The specs of one thread's tools, per server; a server's entries go when its list is replaced."""

    def __init__(self, allowed_tools: Sequence[str] | None, disabled_tools: Sequence[str] | None) -> None:
        self._allowed = list(allowed_tools) if allowed_tools is not None else None
        self._disabled = list(disabled_tools) if disabled_tools else None
        self._specs: dict[tuple[str, str], ToolSpec] = {}
        self._listed: dict[str, tuple[Sequence[McpTool], dict[str, McpTool]]] = {}
        """Per server: its current tool list and that list by name (rebuilt when the slot lists anew)."""

    @property
    def filters(self) -> tuple[list[str] | None, list[str] | None]:
        """The thread's ``allowedTools`` and ``disabledTools``."""
        return self._allowed, self._disabled

    def spec(
        self, name: str, config: McpServerConfig, tools: Sequence[McpTool], tool: str, origin: Visibility
    ) -> ToolSpec:
        """The tool as listed in ``tools`` (captured for the whole call), for a call from ``origin`` (the model, or
        the server's own view); raises ``unknownTool`` or ``toolNotAllowed``."""
        index = self._listed.get(name)
        if index is None or index[0] is not tools:
            index = self._listed[name] = (tools, {t.name: t for t in reversed(tools)})
            for key in [key for key in self._specs if key[0] == name]:
                del self._specs[key]  # validators of a list that is gone go with it
        listed = index[1].get(tool)
        if listed is None:
            raise AppError("unknownTool", f"server {name} has no tool {tool}", server=name, tool=tool)
        key = (name, tool)
        spec = self._specs.get(key)
        if spec is None or spec.tool is not listed:
            views = build_views(name, config, [listed])
            visible = visible_for_context(
                views,
                caller=None,
                include_deferred=True,
                allowed_tools=self._allowed,
                disabled_tools=self._disabled,
                audience="any",
            )
            spec = self._specs[key] = ToolSpec(
                tool=listed,
                allowed=bool(visible),
                visibility=visibility(views[0]) if views else (),  # filtered out: not allowed anyway
                input=arguments_validator(listed.input_schema),
                output=validator(listed.output_schema) if listed.output_schema is not None else None,
            )
        if not spec.allowed:
            raise AppError(
                "toolNotAllowed", f"{full_name(name, tool)} is not allowed in this thread", server=name, tool=tool
            )
        if origin not in spec.visibility:
            who = " and ".join(f"the {caller}" for caller in spec.visibility) or "no one"
            message = f"{full_name(name, tool)} may be called by {who}, not by the {origin}"
            raise AppError("toolNotAllowed", message, server=name, tool=tool, visibility=list(spec.visibility))
        return spec
