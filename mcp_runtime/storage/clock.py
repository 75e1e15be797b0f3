"""The one timestamp format of the data dir and the wire: UTC, milliseconds, ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    """Now as ``2026-01-31T12:00:00.000Z`` (sorts as text in time order)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
