"""JSON Schema checks of tool arguments, results and elicitation answers, reported as ``{path, message}``."""

from __future__ import annotations

import math
from typing import Any


class SchemaCheck:
    """One JSON Schema compiled twice: ``jsonschema`` (the authority) lists the errors, and ``jsonschema-rs``
    answers the common case, a valid instance, far faster (it never fetches a reference and asserts no format,
    like ``jsonschema`` by default). A schema the fast one cannot compile is checked by ``jsonschema`` alone.
    """

    __slots__ = ("fast", "full", "optional")

    def __init__(self, schema: dict[str, Any], *, optional_nulls: bool = False) -> None:
        from jsonschema.validators import validator_for

        self.full = validator_for(schema)(schema)
        self.fast = _fast_validator(schema)
        self.optional = _optional_properties(schema) if optional_nulls else frozenset()


def _optional_properties(schema: dict[str, Any]) -> frozenset[str]:
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, dict):
        return frozenset()
    return frozenset(properties) - frozenset(required if isinstance(required, list) else ())


def _fast_validator(schema: dict[str, Any]) -> Any:
    import jsonschema_rs

    try:
        return jsonschema_rs.validator_for(schema, validate_formats=False, offline=True)
    except Exception:  # a schema it refuses (or a reference it cannot resolve offline): jsonschema alone
        return None


def errors(check: SchemaCheck, instance: Any) -> list[dict[str, str]]:
    if check.optional and isinstance(instance, dict) and None in instance.values():
        instance = {k: v for k, v in instance.items() if v is not None or k not in check.optional}
    if check.fast is not None and check.fast.is_valid(instance):
        return []
    return [
        {"path": "/".join(str(p) for p in err.absolute_path), "message": err.message[:500]}
        for err in sorted(check.full.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))[:20]
    ]


def validator(schema: dict[str, Any]) -> SchemaCheck:
    return SchemaCheck(schema)


_KNOWN_DIALECTS = frozenset(
    f"{base}{end}"
    for base in (
        "http://json-schema.org/draft-04/schema",
        "http://json-schema.org/draft-06/schema",
        "http://json-schema.org/draft-07/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    )
    for end in ("", "#")
)
"""Meta-schemas ``jsonschema-rs`` carries: any other ``$schema`` would make it try to fetch one."""


def schema_problem(schema: Any) -> str | None:
    """Why a tool's JSON Schema is invalid, or None.

    ``jsonschema-rs`` answers the common case, a valid schema, in a fraction of what ``jsonschema`` (the
    authority, which words the problem) takes: a server may send large schemas on every ``list_changed``, so the
    check must cost little per byte and need no cache keyed by what was seen.
    """
    if not isinstance(schema, dict):
        return "is not an object"
    dialect = schema.get("$schema")
    if dialect is None or dialect in _KNOWN_DIALECTS:
        import jsonschema_rs

        if jsonschema_rs.meta.is_valid(schema):
            return None
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        return exc.message[:200]
    return None


def arguments_validator(schema: dict[str, Any]) -> SchemaCheck:
    """Tool arguments: a ``null`` for a property that is not required is "not provided" (SEP-2243 sends no
    ``Mcp-Param-*`` header for it, and an annotated property can never admit ``null`` itself); the arguments are
    still sent as written, and the server decides."""
    return SchemaCheck(schema, optional_nulls=True)


def non_finite(value: Any, limit: int = 20) -> list[dict[str, str]]:
    """Every NaN or ±Infinity in a JSON value, as ``{path, message}``.

    JSON has no such numbers: serialized for a server they silently become ``null``. ``1e999`` parses as
    Infinity, so a value off the wire can hold one even when the literal ``Infinity`` is refused.
    """
    if not _has_non_finite(value):
        return []
    found: list[dict[str, str]] = []
    stack: list[tuple[str, Any]] = [("", value)]
    while stack and len(found) < limit:
        path, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            found.append({"path": path, "message": f"{item} is not a finite number (JSON has no NaN or Infinity)"})
        elif isinstance(item, dict):
            stack.extend((f"{path}/{key}" if path else str(key), inner) for key, inner in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((f"{path}/{index}" if path else str(index), inner) for index, inner in enumerate(item))
    return sorted(found, key=lambda error: error["path"])


def _has_non_finite(value: Any) -> bool:
    """The quick pass (no paths built): almost every value has none."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False
