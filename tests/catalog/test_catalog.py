"""Tool naming, filters, visibility and search (mcp_runtime.catalog): pure, no I/O."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_runtime.catalog.cache import CatalogCache
from mcp_runtime.catalog.names import full_name, split_full_name
from mcp_runtime.catalog.search import ToolIndex, tokenize
from mcp_runtime.catalog.views import AUTO_DEFER_THRESHOLD, allowed_callers, build_views, visible_for_context
from mcp_runtime.config.rules import parse_server_config
from protocol.jsonrpc import AppError
from protocol.status import McpTool
from protocol.tool import ToolListResult, ToolView

SCHEMA = {"type": "object", "properties": {}}


def tool(name: str, description: str | None = None, **extra: Any) -> McpTool:
    return McpTool.model_validate({"name": name, "inputSchema": SCHEMA, "description": description, **extra})


def config(**fields: Any):
    return parse_server_config("srv", {"command": "node", **fields})


def names(views: list[ToolView]) -> list[str]:
    return [v.name for v in views]


# --- naming -------------------------------------------------------------------------------------------------


def test_full_name_and_split_round_trip():
    assert full_name("docs", "search") == "mcp__docs__search"
    assert split_full_name("mcp__docs__search") == ("docs", "search")
    assert split_full_name("mcp__my-srv__get__thing") == ("my-srv", "get__thing")


@pytest.mark.parametrize(
    "name",
    ["docs__search", "mcp__docs", "mcp____search", "mcp__docs__", "mcp__docs__a.b", "mcp__" + "s" * 25 + "__t"],
)
def test_split_full_name_rejects_non_names(name):
    assert split_full_name(name) is None


def test_full_name_limits():
    assert len(full_name("s", "t" * 56)) == 64
    with pytest.raises(AppError) as too_long:
        full_name("s", "t" * 57)
    assert too_long.value.reason == "invalidToolName"
    with pytest.raises(AppError) as bad_char:
        full_name("s", "files.read")
    assert bad_char.value.reason == "invalidToolName"
    with pytest.raises(AppError) as bad_server:
        full_name("a__b", "t")
    assert bad_server.value.reason == "invalidServerName"


def test_build_views_fails_whole_catalog_on_bad_or_duplicate_names():
    with pytest.raises(AppError) as dup:
        build_views("srv", config(), [tool("a"), tool("a")])
    assert dup.value.reason == "invalidToolName"
    with pytest.raises(AppError):
        build_views("srv", config(), [tool("ok"), tool("not ok")])


def test_tokenize_splits_separators_and_camel_case():
    assert tokenize("listPullRequests") == ["list", "pull", "requests"]
    assert tokenize("HTTPServer_get-v2.data file") == ["http", "server", "get", "v2", "data", "file"]
    assert tokenize("getV2Data") == ["get", "v2", "data"]
    assert tokenize("Use the API") == ["use", "the", "api"]


# --- build_views ----------------------------------------------------------------------------------------------


def test_views_copy_fields_and_take_legacy_annotation_title():
    out = {"type": "object"}
    views = build_views(
        "srv",
        config(),
        [
            tool("a", "does a", title="A tool", outputSchema=out, annotations={"readOnlyHint": True}),
            tool("b", annotations={"title": "Legacy B"}),
        ],
    )
    a, b = views
    assert (a.name, a.server, a.tool, a.title, a.description) == ("mcp__srv__a", "srv", "a", "A tool", "does a")
    assert a.input_schema == SCHEMA and a.output_schema == out and a.annotations == {"readOnlyHint": True}
    assert b.title == "Legacy B"


def test_enabled_then_disabled_tools_accept_raw_and_full_names():
    tools = [tool(n) for n in ("a", "b", "c", "d")]
    views = build_views("srv", config(enabledTools=["a", "mcp__srv__b", "c"], disabledTools=["mcp__srv__c"]), tools)
    assert names(views) == ["mcp__srv__a", "mcp__srv__b"]
    assert build_views("srv", config(enabledTools=[]), tools) == []
    assert names(build_views("srv", config(disabledTools=["d", "mcp__other__a"]), tools)) == [
        "mcp__srv__a",
        "mcp__srv__b",
        "mcp__srv__c",
    ]


def test_tool_loading_eager_deferred_auto():
    few = [tool(f"t{i}") for i in range(AUTO_DEFER_THRESHOLD)]
    many = [*few, tool("extra")]
    assert not any(v.deferred for v in build_views("srv", config(), few))
    assert all(v.deferred for v in build_views("srv", config(), many))
    assert not any(v.deferred for v in build_views("srv", config(toolLoading="eager"), many))
    assert all(v.deferred for v in build_views("srv", config(toolLoading="deferred"), few[:1]))
    # auto counts what is left after the server filters
    assert not any(v.deferred for v in build_views("srv", config(disabledTools=["extra"]), many))


def test_always_visible_by_raw_or_full_name_does_not_undo_filters():
    tools = [tool("a"), tool("b"), tool("c")]
    views = build_views(
        "srv",
        config(toolLoading="deferred", alwaysVisibleTools=["a", "mcp__srv__b", "c"], disabledTools=["c"]),
        tools,
    )
    assert {v.tool: v.always_visible for v in views} == {"a": True, "b": True}
    visible = visible_for_context(views, caller=None, include_deferred=False)
    assert names(visible) == ["mcp__srv__a", "mcp__srv__b"]


def test_always_visible_of_another_server_is_ignored():
    views = build_views("srv", config(alwaysVisibleTools=["mcp__other__a"]), [tool("a")])
    assert views[0].always_visible is False


# --- visible_for_context ---------------------------------------------------------------------------------------


def test_deferred_hidden_unless_included():
    views = build_views("srv", config(toolLoading="deferred", alwaysVisibleTools=["a"]), [tool("a"), tool("b")])
    assert names(visible_for_context(views, caller=None, include_deferred=False)) == ["mcp__srv__a"]
    assert names(visible_for_context(views, caller=None, include_deferred=True)) == ["mcp__srv__a", "mcp__srv__b"]


def test_caller_restriction_from_meta():
    tools = [
        tool("open"),
        tool("restricted", _meta={"allowedCallers": ["agent", "planner"]}),
        tool("nobody", _meta={"allowedCallers": "agent"}),  # malformed: fail closed
    ]
    views = build_views("srv", config(), tools)
    assert allowed_callers(views[1]) == ("agent", "planner")
    assert names(visible_for_context(views, caller=None, include_deferred=True)) == ["mcp__srv__open"]
    assert names(visible_for_context(views, caller="agent", include_deferred=True)) == [
        "mcp__srv__open",
        "mcp__srv__restricted",
    ]
    assert names(visible_for_context(views, caller="agen", include_deferred=True)) == ["mcp__srv__open"]


def test_caller_restriction_never_reaches_the_wire():
    views = build_views("srv", config(), [tool("r", _meta={"allowedCallers": ["agent"], "tags": ["x"]})])
    wire = ToolListResult(data=views).model_dump(mode="json")["data"][0]
    assert set(wire) == {"name", "server", "tool", "inputSchema", "deferred", "alwaysVisible"}


def test_thread_globs_on_full_names():
    views = [
        *build_views("gh", parse_server_config("gh", {"command": "x"}), [tool("create_issue"), tool("delete_repo")]),
        *build_views("docs", parse_server_config("docs", {"command": "x"}), [tool("search")]),
    ]
    allowed = visible_for_context(views, caller=None, include_deferred=False, allowed_tools=["mcp__gh__*"])
    assert names(allowed) == ["mcp__gh__create_issue", "mcp__gh__delete_repo"]
    both = visible_for_context(
        views,
        caller=None,
        include_deferred=False,
        allowed_tools=["mcp__gh__*", "mcp__docs__search"],
        disabled_tools=["*__delete_*"],
    )
    assert names(both) == ["mcp__gh__create_issue", "mcp__docs__search"]
    assert visible_for_context(views, caller=None, include_deferred=False, allowed_tools=[]) == []
    # raw tool names are not full names; globs are case-sensitive
    assert visible_for_context(views, caller=None, include_deferred=False, allowed_tools=["search"]) == []
    assert visible_for_context(views, caller=None, include_deferred=False, allowed_tools=["MCP__*"]) == []


# --- search ----------------------------------------------------------------------------------------------------


def catalog() -> list[ToolView]:
    gh = parse_server_config("github", {"command": "x", "toolLoading": "deferred"})
    docs = parse_server_config("docs", {"command": "x"})
    return [
        *build_views(
            "github",
            gh,
            [
                tool("create_issue", "Open a new issue in a repository", title="Create issue"),
                tool("listPullRequests", "List pull requests of a repository"),
                tool("add_comment", "Comment on an issue or pull request"),
                tool("get_file", "Read a file; mentions issue only here"),
            ],
        ),
        *build_views(
            "docs",
            docs,
            [
                tool("search", "Full-text search over documentation pages", _meta={"tags": ["knowledge"]}),
                tool("fetch_page", "Fetch a page", title="Search result page"),
                tool("index", "Rebuild the index", annotations={"tags": ["admin"]}),
            ],
        ),
    ]


def search(query: str, limit: int = 10, **kw: Any) -> tuple[list[str], list[str]]:
    found, missing = ToolIndex(catalog()).search(query, limit, **kw)
    return names(found), missing


def test_select_returns_exactly_those_in_order_with_missing():
    found, missing = search(
        "select:mcp__docs__search, mcp__github__create_issue,mcp__nope__x,mcp__docs__search,github__add_comment",
        limit=1,
    )
    assert found == ["mcp__docs__search", "mcp__github__create_issue"]  # order kept, deduplicated, limit ignored
    assert missing == ["mcp__nope__x", "github__add_comment"]


def test_select_reports_tools_outside_the_context_as_missing():
    found, missing = search("select:mcp__docs__search,mcp__docs__index", visible={"mcp__docs__index"})
    assert (found, missing) == (["mcp__docs__index"], ["mcp__docs__search"])


def test_search_includes_deferred_tools():
    found, _ = search("pull requests")
    assert found[0] == "mcp__github__listPullRequests"
    assert ToolIndex(catalog()).get("mcp__github__listPullRequests").deferred is True


def test_name_match_outranks_title_outranks_description():
    found, _ = search("issue")
    # tool-name token > title-only (none here) > description; name ties broken by name
    assert found[:1] == ["mcp__github__create_issue"]
    assert set(found[1:]) == {"mcp__github__add_comment", "mcp__github__get_file"}
    found, _ = search("search")
    assert found == ["mcp__docs__search", "mcp__docs__fetch_page"]  # name, then title


def test_ties_broken_by_name():
    found, _ = search("repository")
    assert found == ["mcp__github__create_issue", "mcp__github__listPullRequests"]


def test_server_name_tokens_are_searched():
    found, _ = search("github", limit=10)
    assert found == sorted(found) and len(found) == 4


def test_required_term_filters():
    assert search("issue +comment")[0] == ["mcp__github__add_comment"]
    # every docs tool qualifies; the optional term only ranks them
    assert search("+docs page")[0] == ["mcp__docs__fetch_page", "mcp__docs__search", "mcp__docs__index"]
    assert search("+nothingmatches issue")[0] == []


def test_tags_from_meta_and_annotations_are_searched():
    assert search("knowledge")[0] == ["mcp__docs__search"]
    assert search("admin")[0] == ["mcp__docs__index"]


def test_camel_case_and_prefix_and_plural_queries():
    assert search("listPullRequest")[0][0] == "mcp__github__listPullRequests"
    assert search("pull")[0][0] == "mcp__github__listPullRequests"
    assert search("repo")[0] == ["mcp__github__create_issue", "mcp__github__listPullRequests"]  # prefix
    assert search("re")[0] == []  # too short for a prefix match


def test_exact_name_query_comes_first_and_limit_applies():
    assert search("mcp__docs__index", limit=1)[0] == ["mcp__docs__index"]
    assert len(search("issue", limit=2)[0]) == 2


def test_stop_words_only_and_empty_queries_match_nothing():
    assert search("the a of")[0] == []
    assert search("   ")[0] == []


def test_visible_narrows_keyword_search():
    found, _ = search("issue", visible={"mcp__github__get_file"})
    assert found == ["mcp__github__get_file"]


def test_index_rejects_duplicate_full_names():
    views = build_views("srv", config(), [tool("a")])
    with pytest.raises(AppError):
        ToolIndex([*views, *views])


def small_index(*tools: McpTool) -> ToolIndex:
    return ToolIndex(build_views("srv", config(), list(tools)))


def test_title_outranks_description_and_exact_outranks_prefix():
    index = small_index(tool("a_tool", "Export the report"), tool("b_tool", "Other", title="Export report"))
    assert names(index.search("export", 10)[0]) == ["mcp__srv__b_tool", "mcp__srv__a_tool"]
    index = small_index(tool("a_tool", "Clone a repository"), tool("b_tool", "Clone a repo"))
    assert names(index.search("repo", 10)[0]) == ["mcp__srv__b_tool", "mcp__srv__a_tool"]


def test_plural_query_matches_singular_token():
    index = small_index(tool("send", "Send one request"), tool("other", "Unrelated"))
    assert names(index.search("requests", 10)[0]) == ["mcp__srv__send"]


# --- cached answers ---------------------------------------------------------------------------------------------

_WORDS = ["issue", "pull", "requests", "repo", "page", "search", "+docs", "+comment", "the", "index", "knowledge"]


def _cache() -> CatalogCache:
    cache = CatalogCache()
    gh = parse_server_config("github", {"command": "x", "toolLoading": "deferred"})
    docs = parse_server_config("docs", {"command": "x"})
    raw = {
        "github": (
            gh,
            [
                tool("create_issue", "Open a new issue in a repository"),
                tool("add_comment", "Comment on a pull request"),
            ],
        ),
        "docs": (
            docs,
            [tool("search", "Search pages", _meta={"allowedCallers": ["agent"]}), tool("index", "Rebuild the index")],
        ),
    }
    cache.update(raw)
    return cache


@settings(max_examples=60, deadline=None)
@given(
    words=st.lists(st.sampled_from(_WORDS), max_size=4),
    limit=st.integers(min_value=1, max_value=5),
    caller=st.sampled_from([None, "agent"]),
    allowed=st.sampled_from([None, ["mcp__github__*"], []]),
)
def test_cached_search_answers_like_the_index(words, limit, caller, allowed):
    cache = _cache()
    query = " ".join(words)
    _, visible = cache.visible(caller=caller, include_deferred=True, allowed_tools=allowed)
    expected = cache.index().search(query, limit, visible=visible)
    first = cache.search(query, limit, caller=caller, allowed_tools=allowed)
    assert (first.views, first.missing) == expected
    assert cache.search(query, limit, caller=caller, allowed_tools=allowed) is first  # kept, with its encoding
    # the best ``limit`` are a prefix of a longer ranking (ties broken by name, no key function needed)
    longer = cache.index().search(query, 100, visible=visible)[0]
    assert expected[0] == longer[:limit]


def test_cached_answers_and_their_encoding_are_dropped_when_the_catalog_changes():
    cache = _cache()
    kept = cache.search("issue", 10, caller=None)
    assert names(kept.views) == ["mcp__github__create_issue"]
    assert b"create_issue" in kept.encoded()
    cache.update({})
    fresh = cache.search("issue", 10, caller=None)
    assert fresh is not kept
    assert (fresh.views, fresh.missing) == ([], [])
    assert b"create_issue" not in fresh.encoded()
