"""Judging a client's elicitation answer before anything goes upstream (SPEC §7).

An answer that is malformed, or whose ``accept`` content does not fit ``requestedSchema``, is never forwarded:
the server is told ``cancel`` and the client learns why (``invalidElicitationResponse`` plus the errors), so a
host can tell a broken form from its user's cancel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from mcp_runtime.catalog.schemas import non_finite

Action = Literal["accept", "decline", "cancel"]
INVALID_RESPONSE = "invalidElicitationResponse"
MAX_ERRORS = 20


@dataclass(frozen=True)
class Resolution:
    """What the server is told (``action``, ``content``) and, for a daemon-chosen cancel, why."""

    action: Action
    content: dict[str, Any] | None = None
    reason: str | None = None
    errors: tuple[dict[str, str], ...] = ()

    def answer(self) -> dict[str, Any]:
        """The answer as the runtime passes it upstream."""
        if self.content is None:
            return {"action": self.action}
        return {"action": self.action, "content": self.content}


CANCELLED = Resolution("cancel")
"""No answer at all (connection closed, the call ended, the client answered with an error)."""


def _invalid(errors: list[dict[str, str]]) -> Resolution:
    return Resolution("cancel", reason=INVALID_RESPONSE, errors=tuple(errors[:MAX_ERRORS]))


def _schema_errors(schema: dict[str, Any], content: dict[str, Any]) -> list[dict[str, str]]:
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator = validator_for(schema)(schema)
        found = sorted(validator.iter_errors(content), key=lambda e: list(map(str, e.absolute_path)))
    except (SchemaError, TypeError, ValueError):
        return [{"path": "", "message": "the requested schema cannot be checked"}]
    return [
        {"path": "/".join(str(p) for p in error.absolute_path), "message": error.message[:500]}
        for error in found[:MAX_ERRORS]
    ]


def resolve_answer(result: Any, schema: dict[str, Any]) -> Resolution:
    """The client's ``result`` judged against the form it was shown."""
    if not isinstance(result, dict):
        return _invalid([{"path": "", "message": "the answer is not an object"}])
    action = result.get("action")
    if action not in ("accept", "decline", "cancel"):
        return _invalid([{"path": "action", "message": "action must be accept, decline or cancel"}])
    content = result.get("content")
    if content is not None and not isinstance(content, dict):
        return _invalid([{"path": "content", "message": "content must be an object"}])
    if action != "accept":
        return Resolution(action)
    errors = _schema_errors(schema, content if content is not None else {}) or non_finite(content)
    if errors:
        return _invalid(errors)
    return Resolution("accept", content=content)
