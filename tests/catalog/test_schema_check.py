"""``mcp_runtime.catalog.schemas``: the fast validator only ever confirms what ``jsonschema`` (the authority) would
accept, the errors always come from ``jsonschema``, and no schema makes either fetch a reference."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema.validators import validator_for

from mcp_runtime.catalog.schemas import errors, validator

SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 3},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
        },
        "additionalProperties": False,
    },
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"when": {"type": "string", "format": "date-time"}, "x": {"$ref": "#/definitions/x"}},
        "definitions": {"x": {"type": ["number", "null"], "maximum": 10}},
    },
    {"type": "object", "properties": {"o": {"oneOf": [{"type": "string"}, {"type": "object", "required": ["k"]}]}}},
]

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-100, 100) | st.floats(-20, 20) | st.sampled_from(["a", "b", "x", ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["message", "n", "tags", "when",
                                                                               "x", "o", "k"]), inner, max_size=4),
    max_leaves=8,
)


def _authority(schema: dict[str, Any], instance: Any) -> bool:
    return not list(validator_for(schema)(schema).iter_errors(instance))


@pytest.mark.parametrize("schema", SCHEMAS)
@settings(max_examples=150, deadline=None)
@given(instance=JSON)
def test_an_instance_is_accepted_exactly_when_jsonschema_accepts_it(schema: dict[str, Any], instance: Any) -> None:
    check = validator(schema)
    assert check.fast is not None
    assert (errors(check, instance) == []) == _authority(schema, instance)


def test_errors_come_from_jsonschema_with_paths() -> None:
    check = validator(SCHEMAS[1])
    assert errors(check, {"n": 1, "tags": ["c"], "extra": 1}) == [
        {"path": "", "message": "Additional properties are not allowed ('extra' was unexpected)"},
        {"path": "n", "message": "1 is less than the minimum of 3"},
        {"path": "tags/0", "message": "'c' is not one of ['a', 'b']"},
    ]


def test_formats_are_not_asserted_as_jsonschema_does_not() -> None:
    assert errors(validator(SCHEMAS[2]), {"when": "not a date"}) == []


@pytest.mark.parametrize("uri", ["http://127.0.0.1:9/schema.json", "https://example.invalid/s.json"])
def test_a_remote_reference_is_never_fetched(uri: str) -> None:
    check = validator({"type": "object", "properties": {"a": {"$ref": uri}}})
    assert check.fast is None  # refused offline at once: the fast validator is not used for this schema
    assert errors(check, {"b": 1}) == []
