"""Tool naming, visibility and search: the one place that decides what a tool is called and who sees it.

Decisions where SPEC §5/§6 and the seeds are silent (the lead and reviewers rely on these):

* Names. ``mcp__<server>__<tool>``; the tool part uses the same characters as server names
  (``[A-Za-z0-9_-]``) and the full name is at most 64 characters (seed 004). An upstream tool that breaks
  this, or a duplicate tool name, fails the whole server's catalog with ``invalidToolName`` rather than
  being renamed or dropped. :func:`split_full_name` splits at the first ``__`` after the prefix: a server
  ending in ``_`` next to a tool starting with ``_`` is ambiguous, so callers resolve names through the
  built views (``ToolIndex``), never by re-splitting.
* Server filters (``enabledTools``, ``disabledTools``, ``alwaysVisibleTools``) are exact names; each entry
  may be the raw tool name (``search``) or this server's full name (``mcp__docs__search``). Unknown entries
  are ignored. ``enabledTools: []`` enables nothing; ``disabledTools`` is applied after ``enabledTools``.
  ``alwaysVisibleTools`` only lifts deferral; it never re-enables a filtered tool.
* ``toolLoading: "auto"`` counts the tools left *after* the server filters (what would reach the context).
* Caller restriction: an MCP tool whose ``_meta["allowedCallers"]`` is present is visible only to a
  caller whose name is exactly one of those strings; no caller sees it when ``caller`` is ``None``.
  A malformed value (not a list of strings) restricts the tool to nobody (fail closed).
* Tags: ``_meta["tags"]`` and ``annotations["tags"]`` (lists of strings), both searchable.
* Title: ``title``, else the legacy ``annotations["title"]`` (the MCP display-name order).
* Thread filters (``allowedTools``/``disabledTools``) are case-sensitive ``fnmatch`` globs on full names;
  ``allowed_tools=[]`` allows nothing, ``None`` allows everything.
* Search: ``select:`` ignores ``limit`` (it returns exactly what was asked, de-duplicated). Keyword terms
  match a token exactly or, for terms of 3+ characters, as a token prefix at half weight; common English
  stop words are ignored unless marked ``+``. The caller builds the index from the views the context may
  see (``include_deferred=True``), so a hidden tool is reported ``missing`` exactly like an unknown one.

The caller restriction and tags are kept as private attributes of the views :func:`build_views` returns
(:class:`CatalogView`); they never reach the wire. Keep those instances: a view rebuilt from JSON has
no restriction left.
"""

from __future__ import annotations

import fnmatch
import heapq
import re
from bisect import bisect_left
from collections.abc import Container, Iterable, Sequence
from typing import Any, TypeVar

from pydantic import PrivateAttr

from mcp_runtime.config import check_server_name
from mcp_runtime.limits import MAX_TOOL_FULL_NAME
from protocol.config import McpServerConfig
from protocol.jsonrpc import AppError
from protocol.server import McpTool
from protocol.tool import ToolView

PREFIX = "mcp__"
SEPARATOR = "__"
AUTO_DEFER_THRESHOLD = 16
"""``toolLoading: "auto"`` defers a server's tools when it exposes more than this many."""

SELECT_PREFIX = "select:"
ALLOWED_CALLERS_META = "allowedCallers"
TAGS_KEY = "tags"

# Per-field weights of a query token found in that field; a prefix match counts half.
WEIGHT_TOOL_NAME = 10.0
WEIGHT_SERVER_NAME = 8.0
WEIGHT_TITLE = 6.0
WEIGHT_TAG = 4.0
WEIGHT_DESCRIPTION = 2.0
PREFIX_FACTOR = 0.5
MIN_PREFIX_LEN = 3
EXACT_NAME_BONUS = 100.0
"""Added when the whole query is a tool's raw or full name, so that name lookups always come first."""

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]+")
_WORD = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_STOP_WORDS = frozenset("a an and are as at be by for from in into is it of on or that the this to with".split())
_VOCAB_END = "\U0010ffff"

V = TypeVar("V", bound=ToolView)


class CatalogView(ToolView):
    """A :class:`ToolView` that also remembers the tool's caller restriction and tags (never serialized)."""

    _allowed_callers: tuple[str, ...] | None = PrivateAttr(default=None)
    _tags: tuple[str, ...] = PrivateAttr(default=())
    _weights: dict[str, float] | None = PrivateAttr(default=None)  # search tokens, computed by build_views


def _invalid_tool_name(message: str, server: str, tool: str) -> AppError:
    return AppError("invalidToolName", message, server=server[:64], tool=tool[:128])


def full_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``; raises ``invalidServerName``/``invalidToolName`` for names it cannot carry."""
    check_server_name(server)
    if not _TOOL_NAME.fullmatch(tool):
        raise _invalid_tool_name("tool names are characters of [A-Za-z0-9_-]", server, tool)
    name = f"{PREFIX}{server}{SEPARATOR}{tool}"
    if len(name) > MAX_TOOL_FULL_NAME:
        raise _invalid_tool_name(f"full tool name is longer than {MAX_TOOL_FULL_NAME} characters", server, tool)
    return name


def check_tool_names(server: str, names: Sequence[str]) -> None:
    """One server's listed tool names: each one carriable as a full name, none listed twice."""
    seen: set[str] = set()
    for name in names:
        full_name(server, name)
        if name in seen:
            raise _invalid_tool_name(f"tool {name} is listed twice", server, name)
        seen.add(name)


def split_full_name(name: str) -> tuple[str, str] | None:
    """The inverse of :func:`full_name` (split at the first ``__``), or ``None`` when it is not one."""
    if not name.startswith(PREFIX):
        return None
    server, sep, tool = name[len(PREFIX) :].partition(SEPARATOR)
    if not sep:
        return None
    try:
        full_name(server, tool)
    except AppError:
        return None
    return server, tool


def tokenize(text: str) -> list[str]:
    """Lowercased words of ``text``, split on non-alphanumerics (``_ - .`` spaces, ...) and camelCase."""
    out: list[str] = []
    for run in _WORD.findall(text):
        if run[1:].islower() or run.isdigit():  # no inner capital: skip the (slow) camelCase split
            out.append(run.lower())
        else:
            out.extend(part.lower() for part in _CAMEL.split(run) if part)
    return out


def _fold(token: str) -> str:
    """A light plural fold (``requests`` -> ``request``), applied alike to indexed and query tokens."""
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def _strings(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, list | tuple):
        return tuple(item for item in value if isinstance(item, str))
    return None


def _meta(tool: McpTool) -> dict[str, Any]:
    meta = (tool.model_extra or {}).get("_meta")
    return meta if isinstance(meta, dict) else {}


def _allowed_callers(meta: dict[str, Any]) -> tuple[str, ...] | None:
    if ALLOWED_CALLERS_META not in meta:
        return None
    return _strings(meta[ALLOWED_CALLERS_META]) or ()


def _tags(meta: dict[str, Any], annotations: dict[str, Any] | None) -> tuple[str, ...]:
    found = list(_strings(meta.get(TAGS_KEY)) or ())
    found.extend(_strings((annotations or {}).get(TAGS_KEY)) or ())
    return tuple(dict.fromkeys(found))


def _raw_names(server: str, names: Iterable[str] | None) -> set[str] | None:
    """Server filter entries as raw tool names: a full name of this server is reduced to its tool part."""
    if names is None:
        return None
    own = f"{PREFIX}{server}{SEPARATOR}"
    return {name[len(own) :] if name.startswith(own) else name for name in names}


def build_views(server: str, config: McpServerConfig, tools: Sequence[McpTool]) -> list[ToolView]:
    """The server's tools after its filters, with deferral and always-visible flags decided.

    ``config.enabled`` is not consulted: owners never connect a disabled server, so it has no tools.
    """
    check_tool_names(server, [tool.name for tool in tools])
    enabled = _raw_names(server, config.enabled_tools)
    disabled = _raw_names(server, config.disabled_tools) or set()
    kept = [t for t in tools if (enabled is None or t.name in enabled) and t.name not in disabled]

    loading = config.tool_loading
    deferred = loading == "deferred" or (loading == "auto" and len(kept) > AUTO_DEFER_THRESHOLD)
    always = _raw_names(server, config.always_visible_tools) or set()

    views: list[ToolView] = []
    for tool in kept:
        meta = _meta(tool)
        title = tool.title
        if title is None and tool.annotations and isinstance(tool.annotations.get("title"), str):
            title = tool.annotations["title"]
        view = CatalogView(
            name=full_name(server, tool.name),
            server=server,
            tool=tool.name,
            title=title,
            description=tool.description,
            input_schema=tool.input_schema,
            output_schema=tool.output_schema,
            annotations=tool.annotations,
            deferred=deferred,
            always_visible=tool.name in always,
        )
        view._allowed_callers = _allowed_callers(meta)
        view._tags = _tags(meta, tool.annotations)
        view._weights = _token_weights(view)  # tokenized once per catalog, so indexes build fast
        views.append(view)
    return views


def allowed_callers(view: ToolView) -> tuple[str, ...] | None:
    """The callers allowed to see ``view`` (``None``: unrestricted)."""
    # Read the private slot directly: pydantic's attribute lookup for private attributes costs microseconds,
    # and this runs for every tool on every context listing.
    private = view.__pydantic_private__ if isinstance(view, CatalogView) else None
    return private.get("_allowed_callers") if private else None


def tool_tags(view: ToolView) -> tuple[str, ...]:
    private = view.__pydantic_private__ if isinstance(view, CatalogView) else None
    return private.get("_tags", ()) if private else ()


def _token_weights(view: ToolView) -> dict[str, float]:
    """Each (folded) token of the view with the weight of the heaviest field it occurs in."""
    if isinstance(view, CatalogView) and view._weights is not None:
        return view._weights
    weights: dict[str, float] = {}
    fields: list[tuple[float, Iterable[str]]] = [
        (WEIGHT_DESCRIPTION, [view.description or ""]),
        (WEIGHT_TAG, tool_tags(view)),
        (WEIGHT_TITLE, [view.title or ""]),
        (WEIGHT_SERVER_NAME, [view.server]),
        (WEIGHT_TOOL_NAME, [view.tool]),
    ]
    for weight, texts in fields:
        for text in texts:
            for token in tokenize(text):
                token = _fold(token)
                if weights.get(token, 0.0) < weight:
                    weights[token] = weight
    return weights


def _glob(patterns: Sequence[str]) -> re.Pattern[str]:
    """One compiled alternation of case-sensitive globs (an empty list matches nothing)."""
    if not patterns:
        return re.compile(r"(?!)")
    return re.compile("|".join(fnmatch.translate(p) for p in patterns))


def visible_for_context(
    views: Sequence[V],
    *,
    caller: str | None,
    include_deferred: bool,
    allowed_tools: Sequence[str] | None = None,
    disabled_tools: Sequence[str] | None = None,
) -> list[V]:
    """The views a context may see: thread globs, caller restriction, then deferral (order kept)."""
    allow = _glob(allowed_tools) if allowed_tools is not None else None
    deny = _glob(disabled_tools) if disabled_tools else None
    out: list[V] = []
    for view in views:
        if allow is not None and not allow.match(view.name):
            continue
        if deny is not None and deny.match(view.name):
            continue
        callers = allowed_callers(view)
        if callers is not None and (caller is None or caller not in callers):
            continue
        if view.deferred and not (view.always_visible or include_deferred):
            continue
        out.append(view)
    return out


class ToolIndex:
    """An immutable keyword index over views; built once per catalog, searched per request."""

    def __init__(self, views: Sequence[ToolView]) -> None:
        """Index ``views``: build it once per catalog generation and narrow it per request with ``visible``."""
        ordered = sorted(views, key=lambda v: v.name)
        self._views: list[ToolView] = ordered
        self._by_name: dict[str, int] = {}
        self._by_lower_name: dict[str, list[int]] = {}
        postings: dict[str, dict[int, float]] = {}
        for idx, view in enumerate(ordered):
            if view.name in self._by_name:
                raise _invalid_tool_name("duplicate full tool name", view.server, view.tool)
            self._by_name[view.name] = idx
            for key in {view.name.lower(), view.tool.lower()}:
                self._by_lower_name.setdefault(key, []).append(idx)
            for token, weight in _token_weights(view).items():
                postings.setdefault(token, {})[idx] = weight
        self._postings = postings
        self._vocab = sorted(postings)

    def __len__(self) -> int:
        return len(self._views)

    def get(self, name: str) -> ToolView | None:
        idx = self._by_name.get(name)
        return None if idx is None else self._views[idx]

    def search(
        self, query: str, limit: int, *, visible: Container[str] | None = None
    ) -> tuple[list[ToolView], list[str]]:
        """``(tools, missing)``: ``select:`` lookup in the given order, else the best ``limit`` keyword hits.

        ``visible`` (full names, e.g. from :func:`visible_for_context`) narrows one shared index to a
        context without rebuilding it; a selected name outside it is reported missing, like an unknown one.
        """
        stripped = query.strip()
        if stripped[: len(SELECT_PREFIX)].lower() == SELECT_PREFIX:
            return self._select(stripped[len(SELECT_PREFIX) :], visible)
        if limit < 1:
            return [], []
        return self._ranked(stripped, limit, visible), []

    def _select(self, names: str, visible: Container[str] | None) -> tuple[list[ToolView], list[str]]:
        found: list[ToolView] = []
        missing: list[str] = []
        for name in dict.fromkeys(n.strip() for n in names.split(",") if n.strip()):
            idx = self._by_name.get(name)
            if idx is None or (visible is not None and name not in visible):
                missing.append(name)
            else:
                found.append(self._views[idx])
        return found, missing

    def _matches(self, token: str) -> dict[int, float]:
        """Tool index -> weight for one query token: exact token matches, then prefix matches at half weight."""
        result = dict(self._postings.get(token, {}))
        if len(token) >= MIN_PREFIX_LEN:
            vocab = self._vocab
            lo = bisect_left(vocab, token)
            hi = bisect_left(vocab, token + _VOCAB_END, lo)
            for word in vocab[lo:hi]:
                if word == token:
                    continue
                for idx, weight in self._postings[word].items():
                    half = weight * PREFIX_FACTOR
                    if result.get(idx, 0.0) < half:
                        result[idx] = half
        return result

    def _ranked(self, query: str, limit: int, visible: Container[str] | None) -> list[ToolView]:
        optional: list[str] = []
        required: list[str] = []
        texts: list[str] = []
        for term in query.split():
            is_required = term.startswith("+") and len(term) > 1
            text = term[1:] if is_required else term
            texts.append(text)
            for token in tokenize(text):
                if is_required:
                    required.append(_fold(token))
                elif token not in _STOP_WORDS:
                    optional.append(_fold(token))

        scores: dict[int, float] = {}
        allowed: set[int] | None = None
        required_set = set(required)
        for token in dict.fromkeys(required + optional):
            matches = self._matches(token)
            if token in required_set:
                allowed = set(matches) if allowed is None else allowed & matches.keys()
            for idx, weight in matches.items():
                scores[idx] = scores.get(idx, 0.0) + weight
        for idx in self._by_lower_name.get(" ".join(texts).lower(), ()):
            scores[idx] = scores.get(idx, 0.0) + EXACT_NAME_BONUS

        if allowed is not None or visible is not None:
            views = self._views
            scores = {
                idx: score
                for idx, score in scores.items()
                if (allowed is None or idx in allowed) and (visible is None or views[idx].name in visible)
            }
        # Views are sorted by full name, so the index breaks score ties by name. Plain tuples, no key function:
        # a key lambda per scored tool cost more than the scoring itself.
        best = heapq.nsmallest(limit, [(-score, idx) for idx, score in scores.items()])
        return [self._views[idx] for _, idx in best]
