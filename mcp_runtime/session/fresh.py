"""Fresh catalogs (SPEC §16): list results' ``ttlMs``/``cacheScope`` honoured, so a catalog within its TTL is not
read again, not even by a woken server's connection.

The 2026-07-28 era lets a server say how long a list result stays fresh and whether it may be shared across
authorization contexts (SEP-2549). The daemon keeps each listing's pages with that promise, keyed by the server's
configuration, and answers a new connection's list requests from them while they are fresh. ``public`` listings
serve every owner of that configuration (the management connection and every thread's); ``private`` ones serve
only the owner whose connection read them. A ``list_changed`` always reads anew (the server says it changed). As
the SDK's own cache does, hints count only on a 2026-era connection: the 2025 schema has no such fields.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from protocol.config import McpServerConfig

MAX_LISTINGS = 512
"""Listings kept at most (the least recently used go first): memory follows the servers in use."""
MAX_TTL_MS = 86_400_000
"""A server's TTL is capped at a day (the SDK's cap)."""


@dataclass(frozen=True)
class Listing:
    """Every page of one list method as one connection read it, and until when it is fresh."""

    pages: dict[str | None, Any]
    """Pages by the cursor that asked for them (``None`` the first)."""
    expires_at: float
    public: bool
    owner: str


class FreshCatalogs:
    """The fresh listings of every server configuration the daemon connects to (one per daemon)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._listings: OrderedDict[tuple[str, str, str], Listing] = OrderedDict()

    def page(self, key: str, method: str, cursor: str | None, owner: str) -> Any | None:
        """The stored page for ``cursor`` of a fresh listing ``owner`` may be served, or None."""
        now = self._clock()
        for scope in ("public", owner):
            listing = self._listings.get((key, method, scope))
            if listing is not None and listing.expires_at > now and cursor in listing.pages:
                self._listings.move_to_end((key, method, scope))
                return listing.pages[cursor].model_copy(deep=True)
        return None

    def put(self, key: str, method: str, owner: str, pages: dict[str | None, Any]) -> None:
        """Keep a complete listing for the TTL its pages promise (the shortest; public only when every page says
        so); a listing without a TTL replaces what was kept and is not kept itself."""
        ttl_ms = min(_ttl_ms(page) for page in pages.values())
        public = all(getattr(page, "cache_scope", "private") == "public" for page in pages.values())
        for scope in ("public", owner):
            self._listings.pop((key, method, scope), None)
        if ttl_ms <= 0:
            return
        now = self._clock()
        for slot, kept in list(self._listings.items()):
            if kept.expires_at <= now:
                del self._listings[slot]
        listing = Listing(pages, now + min(ttl_ms, MAX_TTL_MS) / 1000, public, owner)
        self._listings[(key, method, "public" if public else owner)] = listing
        while len(self._listings) > MAX_LISTINGS:
            self._listings.popitem(last=False)

    def clear(self) -> None:
        self._listings.clear()


def _ttl_ms(page: Any) -> int:
    ttl = getattr(page, "ttl_ms", 0)
    return ttl if "ttl_ms" in getattr(page, "model_fields_set", ()) and isinstance(ttl, int) else 0


FRESH = FreshCatalogs()


def config_key(config: McpServerConfig, protocol_version: str | None) -> str:
    """What makes two connections the same server for a listing: the whole configuration and the era."""
    text = config.model_dump_json(by_alias=True, exclude_none=True) + "\0" + (protocol_version or "")
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class FreshReader:
    """One connection's list requests, answered from fresh listings when ``reading`` and kept when fresh.

    ``owner`` is the management manager (``""``) or a thread's id."""

    key: str
    owner: str
    modern: bool
    reading: bool = True
    store: FreshCatalogs = FRESH
    _pending: dict[str, dict[str | None, Any]] = field(default_factory=dict)

    async def page(self, method: str, cursor: str | None, send: Callable[[], Awaitable[Any]]) -> Any:
        """One page of ``method``: the fresh one kept, or the server's (kept once its listing is complete)."""
        if not self.modern:
            return await send()
        if self.reading:
            kept = self.store.page(self.key, method, cursor, self.owner)
            if kept is not None:
                return kept
        result = await send()
        if cursor is None:
            self._pending[method] = {}
        pages = self._pending.setdefault(method, {})
        pages[cursor] = result
        if not getattr(result, "next_cursor", None):
            self.store.put(self.key, method, self.owner, self._pending.pop(method))
        return result

    def refreshing(self) -> FreshReader:
        """The same connection's reads after a ``list_changed``: never served from what is kept."""
        return FreshReader(self.key, self.owner, self.modern, reading=False, store=self.store)
