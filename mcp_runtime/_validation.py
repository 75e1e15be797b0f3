"""JSON Schema checks of tool arguments, results and elicitation answers, reported as ``{path, message}``."""

from __future__ import annotations

from typing import Any


def errors(checker: Any, instance: Any) -> list[dict[str, str]]:
    return [
        {"path": "/".join(str(p) for p in err.absolute_path), "message": err.message[:500]}
        for err in sorted(checker.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))[:20]
    ]


def validator(schema: dict[str, Any]) -> Any:
    from jsonschema.validators import validator_for

    return validator_for(schema)(schema)
