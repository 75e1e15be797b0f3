"""The status cache (``mcp_runtime.owners.status``): rows rebuilt only when their key changes, answers kept per
``detail`` while their rows are the same objects, and every answer the catalog model's JSON."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_runtime.config.rules import parse_server_config
from mcp_runtime.owners.status import Detail, RowKey, StatusCache
from protocol.jsonrpc import AppError
from protocol.status import McpTool, ServerStartResult, ServerStatus, ServerStatusListResult

DETAILS: tuple[Detail, ...] = ("full", "toolsAndAuthOnly")
CONFIG = parse_server_config("a", {"command": "true"})


def full_row(name: str, tools: int = 3) -> ServerStatus:
    listed = {f"t{i}": McpTool(name=f"t{i}", input_schema={"type": "object"}) for i in range(tools)}
    return ServerStatus(
        name=name,
        runtime_status="connected",
        server_info={"name": name, "version": "1"},
        tools=listed,
        auth_status="unsupported",
        stderr_tail="last words",
    )


def key(**changes: Any) -> RowKey:
    fields: dict[str, Any] = {
        "auth": "unsupported",
        "starting": False,
        "disabled": False,
        "asleep": False,
        "config": CONFIG,
        "slot": None,
        "state": None,
        "error": None,
    }
    return RowKey(**{**fields, **changes})


def expected(rows: list[ServerStatus], detail: Detail, next_cursor: str | None) -> bytes:
    if detail == "toolsAndAuthOnly":
        rows = [
            ServerStatus(name=r.name, runtime_status=r.runtime_status, tools=r.tools, auth_status=r.auth_status)
            for r in rows
        ]
    return ServerStatusListResult(data=rows, next_cursor=next_cursor).model_dump_json().encode()


def test_a_row_is_rebuilt_only_when_its_key_changes() -> None:
    cache, built = StatusCache(), []

    def build() -> ServerStatus:
        built.append(full_row("a"))
        return built[-1]

    state, error = object(), AppError("failed", "x")
    first = cache.row("a", key(state=state), build)
    assert cache.row("a", key(state=state), build) is first and len(built) == 1
    for changed in (
        key(state=object()),
        key(state=state, starting=True),
        key(state=state, asleep=True),
        key(state=state, error=error),
        key(state=state, auth="oAuth"),
        key(state=state, config=parse_server_config("a", {"command": "true"})),
    ):
        row = cache.row("a", changed, build)
        assert row is built[-1] and row is not first
        first = row
    assert len(built) == 7
    cache.forget("a")
    assert cache.row("a", key(state=state, error=error), build) is built[-1] and len(built) == 8


@pytest.mark.parametrize("detail", DETAILS)
def test_answers_are_kept_per_detail_and_are_the_models_json(detail: Detail) -> None:
    cache = StatusCache()
    rows = [cache.row(name, key(), lambda n=name: full_row(n)) for name in ("a", "b", "c")]
    whole = cache.list_json(rows, detail, None)
    assert whole == expected(rows, detail, None)
    assert cache.list_json(rows, detail, None) is whole  # kept while the rows are the same objects
    other: Detail = "full" if detail == "toolsAndAuthOnly" else "toolsAndAuthOnly"
    assert cache.list_json(rows, other, None) == expected(rows, other, None)
    assert cache.list_json(rows, detail, None) is whole  # the other detail's answer did not replace this one

    page = cache.list_json(rows[:2], detail, "2")
    assert page == expected(rows[:2], detail, "2")
    changed = [rows[0], cache.row("b", key(state=object()), lambda: full_row("b", tools=5)), rows[2]]
    again = cache.list_json(changed, detail, None)
    assert again is not whole and again == expected(changed, detail, None)


def test_the_start_answer_is_the_rows_kept_json() -> None:
    cache = StatusCache()
    row = cache.row("a", key(), lambda: full_row("a", tools=2))
    cache.list_json([row], "full", None)
    assert cache.start_json(row) == ServerStartResult(status=row).model_dump_json().encode()
    stranger = full_row("z")  # a row the cache never built is encoded as it is
    assert cache.start_json(stranger) == ServerStartResult(status=stranger).model_dump_json().encode()


def test_a_lone_surrogate_in_a_row_is_escaped_not_fatal() -> None:
    cache = StatusCache()
    row = cache.row("a", key(), lambda: ServerStatus(name="a", runtime_status="failed", stderr_tail="bad \ud800"))
    assert b"\\ud800" in cache.list_json([row], "full", None)
