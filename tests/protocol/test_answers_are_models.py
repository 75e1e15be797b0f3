"""Answers the daemon writes from kept or pre-encoded bytes are their catalog ``Result`` model's JSON.

Driven through the real daemon (its raw stdout lines, not a parsed copy) against the SDK fixture server: the tool
call's result, ``mcpServerStatus/list`` at both details, paged and whole, ``mcpServer/start`` and
``mcpTool/search``. Each answer must validate as its ``Result`` and equal ``Result.model_validate(answer)
.model_dump_json()``: byte for byte where the daemon writes from the model's own encoding (status, start, search),
as a JSON value for a tool call, whose blocks keep the order of members their server sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bench.pipe import JsonPipe, daemon_command, encode
from protocol.status import ServerStartResult, ServerStatusListResult
from protocol.tool import ToolCallResult, ToolSearchResult
from testing.fixtures import fixture_config

TIMEOUT_LINES = 10_000


class RawDaemon:
    """The daemon over its pipes, answers kept as the bytes it wrote."""

    def __init__(self, pipe: JsonPipe) -> None:
        self.pipe = pipe
        self.ids = 0

    def answer(self, method: str, params: dict[str, Any]) -> bytes:
        """The ``result`` member of the answer exactly as written (a failure fails the test)."""
        self.ids += 1
        self.pipe.write(encode(self.ids, method, params))
        prefix = b'{"jsonrpc":"2.0","id":%d,' % self.ids
        for _ in range(TIMEOUT_LINES):
            line = self.pipe.stdout.readline()
            assert line, "the daemon exited"
            if line.startswith(prefix):
                assert line.startswith(prefix + b'"result":') and line.endswith(b"}\n"), line[:500]
                return line[len(prefix) + len(b'"result":') : -2]
        raise AssertionError(f"no answer to {method}")


@pytest.fixture
def raw(data_dir: Path) -> Iterator[RawDaemon]:
    with JsonPipe(daemon_command(data_dir)) as pipe:
        pipe.initialize()
        yield RawDaemon(pipe)


def assert_is_model_json(model: type[BaseModel], body: bytes, *, bytewise: bool = True) -> dict[str, Any]:
    document = json.loads(body)
    dumped = model.model_validate(document, by_name=False).model_dump_json().encode()
    assert dumped == body if bytewise else json.loads(dumped) == document
    return document  # type: ignore[no-any-return]


def test_tool_call_answers_are_the_models_json(raw: RawDaemon) -> None:
    config = fixture_config(protocol="2026-07-28")
    thread_id = json.loads(raw.answer("thread/start", {"mcpServers": {"fx": config}}))["thread"]["id"]
    calls = [("echo", {"text": "héllo"}), ("scalar", {}), ("big", {"bytes": 40_000}), ("media", {"bytes": 300})]
    for tool, arguments in calls:
        params = {"threadId": thread_id, "server": "fx", "tool": tool, "arguments": arguments}
        document = assert_is_model_json(ToolCallResult, raw.answer("mcpServer/tool/call", params), bytewise=False)
        assert document["content"], tool


def test_status_start_and_search_answers_are_the_models_json(raw: RawDaemon) -> None:
    for name in ("a", "b", "c"):
        raw.answer("mcpServer/create", {"name": name, "config": fixture_config()})
    for name in ("a", "c"):
        started = assert_is_model_json(ServerStartResult, raw.answer("mcpServer/start", {"name": name}))
        assert started["status"]["runtimeStatus"] == "connected" and started["status"]["tools"]
    for detail in ("full", "toolsAndAuthOnly"):
        for _ in range(2):  # the first answer is built, the second kept
            whole = assert_is_model_json(ServerStatusListResult, raw.answer("mcpServerStatus/list", {"detail": detail}))
            assert [row["name"] for row in whole["data"]] == ["a", "b", "c"] and "nextCursor" not in whole
        cursor, names = None, []
        while True:
            params: dict[str, Any] = {"detail": detail, "limit": 2, **({"cursor": cursor} if cursor else {})}
            page = assert_is_model_json(ServerStatusListResult, raw.answer("mcpServerStatus/list", params))
            names += [row["name"] for row in page["data"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert names == ["a", "b", "c"]
        one = assert_is_model_json(
            ServerStatusListResult, raw.answer("mcpServerStatus/list", {"detail": detail, "serverName": "c"})
        )
        assert [row["name"] for row in one["data"]] == ["c"]
    slim = json.loads(raw.answer("mcpServerStatus/list", {"detail": "toolsAndAuthOnly"}))["data"][0]
    assert set(slim) == {"name", "runtimeStatus", "tools", "authStatus", "resources", "resourceTemplates"}
    for query in ("echo", "select:mcp__a__echo,mcp__zz__nope"):
        found = assert_is_model_json(ToolSearchResult, raw.answer("mcpTool/search", {"query": query}))
        assert found["data"]
