"""One owner's derived tool view, kept between reads: views and the search index rebuilt only when a connected
server's catalog changes, visible sets and search answers (with their wire encoding) kept per context, and the
tools calls run with their compiled validators (``spec``). Lists, search and calls judge visibility here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp_runtime.catalog.names import full_name
from mcp_runtime.catalog.schemas import arguments_validator, validator
from mcp_runtime.catalog.search import ToolIndex
from mcp_runtime.catalog.views import build_views, visibility, visible_for_context
from protocol.config import McpServerConfig
from protocol.jsonrpc import AppError
from protocol.status import McpTool
from protocol.tool import ToolView, Visibility

VISIBLE_CACHE_SIZE = 64
SEARCH_CACHE_SIZE = 256
"""Answers kept per catalog generation; past this many distinct (context, query, limit) the cache starts over."""
SEARCH_CACHE_BYTES = 8 * 1024 * 1024
"""...or past this many bytes of kept encodings: an answer of tools with large schemas is large."""


class _Spent:
    """Bytes of encodings the kept answers hold."""

    __slots__ = ("bytes",)

    def __init__(self) -> None:
        self.bytes = 0


@dataclass(frozen=True)
class ToolSpec:
    """One listed tool with the owner's decision about it and its compiled input and output validators."""

    tool: McpTool
    allowed: bool
    visibility: tuple[Visibility, ...]
    input: Any
    output: Any


class SearchAnswer:
    """One kept search answer: the tools, the selected names not found, and its wire encoding, made by the first
    reader that sends it (the cache drops all three with its generation, and counts the encodings' bytes).
    Shared: the tools and names are never changed."""

    __slots__ = ("_encoded", "_spent", "missing", "views")

    def __init__(self, views: list[ToolView], missing: list[str], spent: _Spent | None = None) -> None:
        self.views = views
        self.missing = missing
        self._encoded: bytes | None = None
        self._spent = spent

    def encoded(self) -> bytes:
        """The ``ToolSearchResult`` as compact JSON, encoded once per kept answer: a repeated query costs a
        lookup."""
        if self._encoded is None:
            from protocol.encoding import model_json
            from protocol.tool import ToolSearchResult

            self._encoded = model_json(ToolSearchResult(data=self.views, missing=self.missing or None))
            if self._spent is not None:
                self._spent.bytes += len(self._encoded)
        return self._encoded


class CatalogCache:
    """The derived tool view of one owner's servers: views and the search index, rebuilt only when a catalog
    changes, and the specs of the tools its calls run.

    Connections replace their tool list (never mutate it) on refresh, so identity of the config and the
    tool list tells whether a server's views (and a tool's validators) are still current.
    """

    def __init__(self) -> None:
        self._servers: dict[str, tuple[McpServerConfig, Sequence[McpTool], list[ToolView]]] = {}
        self._specs: dict[tuple[str, str], ToolSpec] = {}
        self._listed: dict[str, tuple[Sequence[McpTool], dict[str, McpTool]]] = {}
        """Per server: the tool list its last call ran from and that list by name (rebuilt when the slot lists
        anew)."""
        self._index: ToolIndex | None = None
        self._visible: dict[tuple[Any, ...], tuple[list[ToolView], frozenset[str]]] = {}
        self._answers: dict[tuple[Any, ...], SearchAnswer] = {}
        self._spent = _Spent()

    def _clear_answers(self) -> None:
        self._answers.clear()
        self._spent = _Spent()  # answers already handed out count against the old one

    def update(self, servers: dict[str, tuple[McpServerConfig, Sequence[McpTool]]]) -> None:
        changed = set(self._servers) != set(servers)
        for name, (config, tools) in servers.items():
            cached = self._servers.get(name)
            if cached is None or cached[0] is not config or cached[1] is not tools:
                self._servers[name] = (config, tools, build_views(name, config, tools))
                changed = True
        for name in set(self._servers) - set(servers):
            del self._servers[name]
        if changed:
            self._index = None
            self._visible.clear()
            self._clear_answers()

    def forget(self, server: str) -> None:
        """A stopped server: its views (and the tool list they come from) go now, not at the next read."""
        if self._servers.pop(server, None) is not None:
            self._index = None
            self._visible.clear()
            self._clear_answers()

    def views(self, server: str | None = None) -> list[ToolView]:
        if server is not None:
            cached = self._servers.get(server)
            return list(cached[2]) if cached else []
        return [view for name in sorted(self._servers) for view in self._servers[name][2]]

    def index(self) -> ToolIndex:
        if self._index is None:
            self._index = ToolIndex(self.views())
        return self._index

    def visible(
        self,
        *,
        caller: str | None,
        include_deferred: bool,
        allowed_tools: Sequence[str] | None = None,
        disabled_tools: Sequence[str] | None = None,
    ) -> tuple[list[ToolView], frozenset[str]]:
        """``visible_for_context`` over every view (and the set of full names), memoized per context."""
        key = _context_key(caller, include_deferred, allowed_tools, disabled_tools)
        hit = self._visible.get(key)
        if hit is None:
            if len(self._visible) >= VISIBLE_CACHE_SIZE:
                self._visible.clear()
            views = visible_for_context(
                self.views(),
                caller=caller,
                include_deferred=include_deferred,
                allowed_tools=allowed_tools,
                disabled_tools=disabled_tools,
            )
            hit = self._visible[key] = (views, frozenset(view.name for view in views))
        return hit

    def search(
        self,
        query: str,
        limit: int,
        *,
        caller: str | None,
        allowed_tools: Sequence[str] | None = None,
        disabled_tools: Sequence[str] | None = None,
    ) -> SearchAnswer:
        """:meth:`ToolIndex.search` over what the context sees (deferred included), answers kept per generation."""
        key = (_context_key(caller, True, allowed_tools, disabled_tools), query, limit)
        hit = self._answers.get(key)
        if hit is None:
            _, visible = self.visible(
                caller=caller, include_deferred=True, allowed_tools=allowed_tools, disabled_tools=disabled_tools
            )
            if len(self._answers) >= SEARCH_CACHE_SIZE or self._spent.bytes > SEARCH_CACHE_BYTES:
                self._clear_answers()
            views, missing = self.index().search(query, limit, visible=visible)
            hit = self._answers[key] = SearchAnswer(views, missing, self._spent)
        return hit

    def spec(
        self,
        name: str,
        config: McpServerConfig,
        tools: Sequence[McpTool],
        tool: str,
        origin: Visibility,
        *,
        allowed_tools: Sequence[str] | None = None,
        disabled_tools: Sequence[str] | None = None,
    ) -> ToolSpec:
        """The tool as listed in ``tools`` (captured for the whole call), for a call from ``origin`` (the model, or
        the server's own view) under the owner's filters; raises ``unknownTool`` or ``toolNotAllowed``."""
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
                allowed_tools=allowed_tools,
                disabled_tools=disabled_tools,
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


def _context_key(
    caller: str | None,
    include_deferred: bool,
    allowed_tools: Sequence[str] | None,
    disabled_tools: Sequence[str] | None,
) -> tuple[Any, ...]:
    return (
        caller,
        include_deferred,
        None if allowed_tools is None else tuple(allowed_tools),
        tuple(disabled_tools or ()),
    )
