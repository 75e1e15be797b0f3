"""Which tools a context sees: server filters, deferral, always-visible tools, thread globs and callers.

* Server filters (``enabledTools``, ``disabledTools``, ``alwaysVisibleTools``) are exact names, raw (``search``)
  or this server's full name; unknown entries are ignored; ``disabledTools`` applies after ``enabledTools``;
  ``alwaysVisibleTools`` only lifts deferral. ``toolLoading: "auto"`` counts the tools left after the filters.
* A tool whose ``_meta["allowedCallers"]`` is present is visible only to a caller named there (a malformed value
  restricts it to nobody); thread filters are case-sensitive ``fnmatch`` globs on full names.
* Title: ``title``, else ``annotations["title"]``; tags: ``_meta["tags"]`` and ``annotations["tags"]``.
* MCP Apps: ``_meta.ui`` (``resourceUri``, ``visibility``), or the older ``_meta["ui/resourceUri"]``, is the
  view's ``ui``. A model's lists never hold a tool whose visibility lacks ``model``; unknown visibility entries
  are dropped, a lone string is a list of one, and a visibility left empty or of another type is no one's (fail
  closed).
The caller restriction and tags live in private attributes of :class:`CatalogView`: they never reach the wire,
so keep the view instances (a view rebuilt from JSON has no restriction left).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal, TypeVar

from pydantic import PrivateAttr

from mcp_runtime.catalog.names import check_tool_names, full_name
from protocol.config import McpServerConfig
from protocol.status import McpTool
from protocol.tool import BOTH, ToolUi, ToolView, Visibility
from protocol.tool_names import TOOL_PREFIX, TOOL_SEPARATOR

AUTO_DEFER_THRESHOLD = 16
"""``toolLoading: "auto"`` defers a server's tools when it exposes more than this many."""
ALLOWED_CALLERS_META = "allowedCallers"
UI_META = "ui"
LEGACY_UI_META = "ui/resourceUri"
TAGS_KEY = "tags"

V = TypeVar("V", bound=ToolView)


class CatalogView(ToolView):
    """A :class:`ToolView` that also remembers the tool's caller restriction and tags (never serialized)."""

    _allowed_callers: tuple[str, ...] | None = PrivateAttr(default=None)
    _tags: tuple[str, ...] = PrivateAttr(default=())
    _weights: dict[str, float] | None = PrivateAttr(default=None)  # search tokens, computed once per view


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


def _ui(meta: dict[str, Any]) -> ToolUi | None:
    """The tool's MCP Apps view, from ``_meta.ui`` or the older ``_meta["ui/resourceUri"]``."""
    ui = meta.get(UI_META)
    if isinstance(ui, dict):
        uri = ui.get("resourceUri")
        allowed = _visibility(ui.get("visibility"))
        return ToolUi(resource_uri=uri if isinstance(uri, str) else None, visibility=allowed)
    legacy = meta.get(LEGACY_UI_META)
    if isinstance(legacy, str):
        return ToolUi(resource_uri=legacy, visibility=list(BOTH))
    return None


def _visibility(value: Any) -> list[Visibility]:
    """Absent (or null): both. One string is the one entry it names (``"app"`` is ``["app"]``); a list keeps its
    known entries; anything else names no one (fail closed, never open)."""
    if value is None:
        return list(BOTH)
    named = (value,) if isinstance(value, str) else _strings(value) or ()
    return [v for v in BOTH if v in named]


def visibility(view: ToolView) -> tuple[Visibility, ...]:
    """Who may call the tool of ``view``: a plain tool, both."""
    return tuple(view.ui.visibility) if view.ui is not None else BOTH


def _raw_names(server: str, names: Iterable[str] | None) -> set[str] | None:
    """Server filter entries as raw tool names: a full name of this server is reduced to its tool part."""
    if names is None:
        return None
    own = f"{TOOL_PREFIX}{server}{TOOL_SEPARATOR}"
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
            ui=_ui(meta),
        )
        view._allowed_callers = _allowed_callers(meta)
        view._tags = _tags(meta, tool.annotations)
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
    audience: Literal["model", "any"] = "model",
) -> list[V]:
    """The views a context may see: thread globs, caller restriction, a model's visibility (``any``: a call, whose
    origin is judged on its own), then deferral (order kept)."""
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
        if audience == "model" and view.ui is not None and "model" not in view.ui.visibility:
            continue
        if view.deferred and not (view.always_visible or include_deferred):
            continue
        out.append(view)
    return out
