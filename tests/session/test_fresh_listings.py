"""The daemon's fresh listings (SPEC §16, ``ttlMs``/``cacheScope``): kept for the TTL the pages promise, shared by
scope, and bounded. The SDK's own result models stand for the pages a server sent."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from mcp_runtime.session.fresh import MAX_LISTINGS, MAX_TTL_MS, FreshCatalogs


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def page(ttl_ms: int | None, scope: str = "private", next_cursor: str | None = None) -> Any:
    fields: dict[str, Any] = {"tools": [], "nextCursor": next_cursor, "cacheScope": scope}
    if ttl_ms is not None:
        fields["ttlMs"] = ttl_ms
    return types.ListToolsResult.model_validate(fields)


def test_a_listing_is_served_within_its_ttl_and_not_after() -> None:
    clock = Clock()
    store = FreshCatalogs(clock)
    store.put("k", "tools/list", "thr_a", {None: page(5000)})
    assert store.page("k", "tools/list", None, "thr_a") is not None
    clock.now += 4.9
    assert store.page("k", "tools/list", None, "thr_a") is not None
    clock.now += 0.2
    assert store.page("k", "tools/list", None, "thr_a") is None


def test_private_listings_serve_their_owner_and_public_ones_every_owner() -> None:
    store = FreshCatalogs(Clock())
    store.put("k", "tools/list", "thr_a", {None: page(60_000, "private")})
    assert store.page("k", "tools/list", None, "thr_b") is None
    assert store.page("k", "tools/list", None, "") is None
    store.put("k", "prompts/list", "thr_a", {None: page(60_000, "public")})
    assert store.page("k", "prompts/list", None, "thr_b") is not None
    assert store.page("other", "prompts/list", None, "thr_b") is None  # another configuration


def test_the_shortest_ttl_and_the_narrowest_scope_of_the_pages_win() -> None:
    clock = Clock()
    store = FreshCatalogs(clock)
    pages = {None: page(60_000, "public", next_cursor="2"), "2": page(1000, "private")}
    store.put("k", "tools/list", "thr_a", pages)
    assert store.page("k", "tools/list", "2", "thr_a") is not None
    assert store.page("k", "tools/list", None, "thr_b") is None  # one private page makes the listing private
    clock.now += 1.5
    assert store.page("k", "tools/list", None, "thr_a") is None


def test_no_ttl_keeps_nothing_and_replaces_what_was_kept() -> None:
    store = FreshCatalogs(Clock())
    store.put("k", "tools/list", "thr_a", {None: page(60_000)})
    store.put("k", "tools/list", "thr_a", {None: page(None)})
    assert store.page("k", "tools/list", None, "thr_a") is None


def test_a_ttl_is_capped_at_a_day_and_the_store_is_bounded() -> None:
    clock = Clock()
    store = FreshCatalogs(clock)
    store.put("k", "tools/list", "thr_a", {None: page(MAX_TTL_MS * 10)})
    clock.now += MAX_TTL_MS / 1000 + 1
    assert store.page("k", "tools/list", None, "thr_a") is None
    for index in range(MAX_LISTINGS + 10):
        store.put(f"k{index}", "tools/list", "thr_a", {None: page(60_000)})
    assert store.page("k0", "tools/list", None, "thr_a") is None
    assert store.page(f"k{MAX_LISTINGS + 9}", "tools/list", None, "thr_a") is not None


def test_a_served_page_is_a_copy() -> None:
    store = FreshCatalogs(Clock())
    store.put("k", "tools/list", "thr_a", {None: page(60_000)})
    served = store.page("k", "tools/list", None, "thr_a")
    assert served is not None
    served.tools.append(types.Tool(name="planted", input_schema={"type": "object"}))
    again = store.page("k", "tools/list", None, "thr_a")
    assert again is not None and again.tools == []
