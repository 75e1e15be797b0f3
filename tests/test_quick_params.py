"""The hot path's quick params check of ``mcpServer/tool/call`` agrees with ``ToolCallParams``.

It may decline anything (the model then decides); whatever it accepts, the model accepts and reads the same.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from app_server.handlers.threads import quick_call_params
from protocol.tool import ToolCallParams

BASE = {"threadId": "t", "server": "fx", "tool": "echo"}
CASES: list[Any] = [
    BASE,
    {**BASE, "arguments": {"text": "hi"}, "turnId": "u", "timeoutMs": 5, "_meta": {"k": 1}},
    {**BASE, "arguments": None, "turnId": None, "timeoutMs": None, "_meta": None},
    {"server": "fx", "tool": "echo"},
    {**BASE, "timeoutMs": 0},
    {**BASE, "timeoutMs": 300_001},
    {**BASE, "timeoutMs": 300_000},
    {**BASE, "timeoutMs": True},
    {**BASE, "timeoutMs": 5.0},
    {**BASE, "timeoutMs": "5"},
    {**BASE, "arguments": []},
    {**BASE, "arguments": "x"},
    {**BASE, "_meta": []},
    {**BASE, "server": 1},
    {**BASE, "tool": None},
    {**BASE, "threadId": 3},
    {**BASE, "thread_id": "t"},
    {**BASE, "extra": 1},
    {"threadId": "t", "tool": "echo"},
    {"threadId": "t", "server": "fx"},
    [],
    None,
    "x",
]


def _model(params: Any) -> ToolCallParams | None:
    try:
        return ToolCallParams.model_validate(params if params is not None else {})
    except ValidationError:
        return None


@pytest.mark.parametrize("params", CASES)
def test_quick_check_accepts_only_what_the_model_accepts_and_reads_it_the_same(params: Any) -> None:
    quick = quick_call_params(params)
    if quick is None:
        return
    model = _model(params)
    assert model is not None, f"quick path accepted params the model rejects: {params!r}"
    assert quick.model_dump() == model.model_dump()


def test_plain_params_take_the_quick_path() -> None:
    assert quick_call_params(CASES[0]) is not None
    assert quick_call_params(CASES[1]) is not None
