"""Keyword search over a catalog's views (``mcpTool/search``).

``select:a,b`` returns exactly those names in that order (``limit`` ignored, unknown or hidden names reported
missing). Keyword terms match a token exactly or, from 3 characters, as a token prefix at half weight; common
English stop words are ignored unless marked ``+`` (required). The index is built from every view of the catalog
and narrowed per request to what the context may see.
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_left
from collections.abc import Container, Iterable, Sequence

from mcp_runtime.catalog.names import invalid_tool_name
from mcp_runtime.catalog.views import CatalogView, tool_tags
from protocol.tool import ToolView

SELECT_PREFIX = "select:"

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

_WORD = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_STOP_WORDS = frozenset("a an and are as at be by for from in into is it of on or that the this to with".split())
_VOCAB_END = "\U0010ffff"


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


def _token_weights(view: ToolView) -> dict[str, float]:
    """Each (folded) token of the view with the weight of the heaviest field it occurs in."""
    cached = view._weights if isinstance(view, CatalogView) else None
    if cached is not None:
        return cached
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
    if isinstance(view, CatalogView):
        view._weights = weights  # tokenized once per view: an index over the same views builds fast
    return weights


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
                raise invalid_tool_name("duplicate full tool name", view.server, view.tool)
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
