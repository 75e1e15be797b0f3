"""Offset cursors for lists the daemon owns; opaque to clients."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from protocol.jsonrpc import AppError

T = TypeVar("T")
DEFAULT_LIMIT = 100


def page(items: Sequence[T], cursor: str | None, limit: int | None) -> tuple[list[T], str | None]:
    """One page of ``items`` and the cursor of the next page (None at the end)."""
    start = 0
    if cursor is not None:
        if not cursor.isdigit() or int(cursor) > len(items):
            raise AppError("invalidParams", "invalid cursor", errors=[{"path": "cursor", "message": "invalid cursor"}])
        start = int(cursor)
    end = start + (limit or DEFAULT_LIMIT)
    return list(items[start:end]), (str(end) if end < len(items) else None)
