"""One owner's tool catalog kept between reads: views and the search index rebuilt only when a connected
server's catalog changes, visible sets and search answers (with their wire encoding) kept per context."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_runtime.catalog.search import ToolIndex
from mcp_runtime.catalog.views import build_views, visible_for_context
from protocol.config import McpServerConfig
from protocol.status import McpTool
from protocol.tool import ToolView

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


class SearchAnswer:
    """One kept search answer: the tools, the selected names not found, and its wire encoding, which the first
    reader that sends it stores (the cache drops all three with its generation, and counts the encodings'
    bytes). Shared: the tools and names are never changed."""

    __slots__ = ("_encoded", "_spent", "missing", "views")

    def __init__(self, views: list[ToolView], missing: list[str], spent: _Spent | None = None) -> None:
        self.views = views
        self.missing = missing
        self._encoded: bytes | None = None
        self._spent = spent

    @property
    def encoded(self) -> bytes | None:
        return self._encoded

    @encoded.setter
    def encoded(self, value: bytes | None) -> None:
        if self._spent is not None:
            self._spent.bytes += len(value or b"") - len(self._encoded or b"")
        self._encoded = value


class CatalogCache:
    """Views and the search index of one owner's connected servers, rebuilt only when a catalog changes.

    Connections replace their tool list (never mutate it) on refresh, so identity of the config and the
    tool list tells whether a server's views are still current.
    """

    def __init__(self) -> None:
        self._servers: dict[str, tuple[McpServerConfig, Sequence[McpTool], list[ToolView]]] = {}
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
