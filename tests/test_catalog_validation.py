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
