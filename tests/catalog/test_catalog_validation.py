"""Tool lists as the SDK hands them over: the same rules as plain JSON, validated once per identical list."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_types import Tool

from mcp_runtime.session.refresh import validate_sdk_tools, validate_tools
from protocol.jsonrpc import AppError

SCHEMA = {"type": "object", "properties": {"x": {"type": "number", "default": 1.0}}}


def tools(*names: str, **extra: Any) -> list[Tool]:
    return [Tool(name=name, input_schema=SCHEMA, **extra) for name in names]


def test_same_models_as_the_plain_path() -> None:
    listed = tools("a", "b", description="héllo", output_schema={"type": "object"}, _meta={"tags": ["t"]})
    plain = validate_tools("fx", [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed])
    assert validate_sdk_tools("fx", listed) == plain


def test_identical_lists_share_one_validated_list_and_a_change_does_not() -> None:
    first = validate_sdk_tools("one", tools("a", "b"))
    assert validate_sdk_tools("two", tools("a", "b")) is first
    changed = validate_sdk_tools("one", tools("a", "c"))
    assert changed is not first and [t.name for t in changed] == ["a", "c"]


@pytest.mark.parametrize(
    ("server", "listed", "reason"),
    [
        ("fx", tools("a b"), "invalidToolName"),
        ("fx", tools("dup", "dup"), "invalidToolName"),
        ("fx", [Tool(name="t", input_schema={"type": "objectx"})], "startupFailed"),
        ("fx", [Tool(name=f"t{i}", input_schema=SCHEMA) for i in range(129)], "tooManyTools"),
        (
            "fx",
            [Tool(name=f"t{i}", input_schema=SCHEMA, description="d" * 5000) for i in range(120)],
            "catalogTooLarge",
        ),
    ],
)
def test_the_rules_of_the_plain_path(server: str, listed: list[Tool], reason: str) -> None:
    with pytest.raises(AppError) as info:
        validate_sdk_tools(server, listed)
    assert info.value.reason == reason


def test_a_valid_list_is_still_checked_for_each_server_name() -> None:
    listed = tools("t" * 50)
    assert validate_sdk_tools("s", listed)
    with pytest.raises(AppError) as info:
        validate_sdk_tools("longer-server-name", tools("t" * 50))
    assert info.value.reason == "invalidToolName"


def test_text_that_is_not_valid_unicode_takes_the_plain_path() -> None:
    validated = validate_sdk_tools("fx", tools("a", description="x\ud800y"))
    assert validated[0].description == "x\ud800y"


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "object", "properties": {"a": {"type": "string"}}}, None),
        ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}, None),
        ({"type": "strin"}, "is not valid"),
        ({"$schema": "http://json-schema.org/draft-07/schema#", "required": "x"}, "'x' is not of type 'array'"),
        ({"$schema": "https://schemas.example.com/custom", "minimum": "x"}, "'x' is not of type 'number'"),
        ([1], "is not an object"),
    ],
)
def test_schema_problems_are_worded_by_jsonschema(schema: Any, problem: str | None) -> None:
    """The fast check answers only a valid schema of a dialect it carries (an unknown ``$schema`` is never fetched:
    the authority, which works offline, decides and words it)."""
    from mcp_runtime.catalog.schemas import schema_problem

    found = schema_problem(schema)
    assert found is None if problem is None else problem in (found or ""), found


def test_a_seen_list_is_forgotten_with_the_sessions_that_held_it() -> None:
    """Validated lists are kept by digest while live: one no session holds is not kept for its text."""
    import gc

    from mcp_runtime.session import refresh

    listed = validate_sdk_tools("fx", tools("forgotten"))
    assert any(shared is listed for shared in refresh._VALIDATED.values())
    assert all(len(key) == 32 for key in refresh._VALIDATED.keys())
    del listed
    gc.collect()
    assert not any([t.name for t in shared] == ["forgotten"] for shared in refresh._VALIDATED.values())
