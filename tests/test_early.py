"""``app_server.early`` against the parts it stands in for: argparse and the config policy (``cli``), the data dir
``cli`` resolves, ``wire.decode``; and, in a child process, what it imports and what it hands over."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app_server import early, wire
from app_server.cli import _parser, default_data_dir
from mcp_runtime import ConfigPolicy

ROOT = Path(__file__).resolve().parent.parent

ARGVS: list[list[str]] = [
    [],
    ["--event-loop", "asyncio", "--log-level", "warning"],
    ["--data-dir", "/d"],
    ["--data-dir=/d", "--log-level", "debug"],
    ["--log-level=error", "--transports", "stdio"],
    ["--transports=stdio,http", "--stdio-sandbox", '["bwrap", "--die-with-parent"]'],
    ["--data-dir", "/a", "--data-dir", "/b"],
    ["--data-dir=", "--log-level", "info"],
    ["--data-dir=-x"],
    ["--data-dir", "-x"],
    ["--data-dir"],
    ["--data", "/d"],
    ["--log-level", "trace"],
    ["--event-loop", "uvloop"],
    ["--event-loop=trio"],
    ["--transports", "stdio, http"],
    ["--transports", "stdio,,http"],
    ["--transports", ""],
    ["--transports", "sse"],
    ["--stdio-sandbox", "[]"],
    ["--stdio-sandbox", '[""]'],
    ["--stdio-sandbox", '["bwrap", 1]'],
    ["--stdio-sandbox", "bwrap"],
    ["--listen", "unix:/tmp/s"],
    ["--version"],
    ["-h"],
    ["generate-ts", "--out", "/tmp/x"],
    ["--data-dir", "/d", "--"],
]


def _ordinary_path_serves_stdio(argv: list[str]) -> bool:
    """What ``cli.main`` would do: parse, check the policy; a plain stdio serve with no socket."""
    try:
        args = _parser().parse_args(argv)
        ConfigPolicy.from_options(args.transports, args.stdio_sandbox)
    except (SystemExit, ValueError):
        return False
    return args.command is None and args.listen is None


@pytest.mark.parametrize("argv", ARGVS, ids=[" ".join(a) or "(none)" for a in ARGVS])
def test_only_command_lines_cli_serves_on_stdio_take_the_early_path(argv: list[str], capsys: Any) -> None:
    options = early.serve_options(argv)
    if options is not None:
        assert _ordinary_path_serves_stdio(argv), argv
    capsys.readouterr()


def test_the_common_command_lines_take_the_early_path() -> None:
    for argv in ARGVS[:9]:
        assert early.serve_options(argv) is not None, argv


DATA_DIRS = ["/d", "/d/", "/a//b", "//d", "/a/./b", "/a/../b", "/a/.", "rel", "rel/../x", "./x", "", ".", "/"]
ENVS: list[dict[str, str]] = [
    {"HOME": "/home/u"},
    {"HOME": "/home/u/"},
    {"HOME": "rel"},
    {"HOME": "/h", "XDG_DATA_HOME": "/x"},
    {"HOME": "/h", "XDG_DATA_HOME": "/x//y/"},
    {"HOME": "/h", "XDG_DATA_HOME": "", "MCP_APP_SERVER_HOME": "/m/."},
    {"MCP_APP_SERVER_HOME": "m", "XDG_DATA_HOME": "/x"},
]


@pytest.mark.parametrize("value", DATA_DIRS)
def test_data_dir_is_the_one_cli_resolves(value: str) -> None:
    assert early.data_dir(value, {}) == str(Path(value).expanduser().absolute())


@pytest.mark.parametrize("env", ENVS)
def test_default_data_dir_is_the_one_cli_resolves(env: dict[str, str]) -> None:
    assert early.data_dir(None, env) == str(default_data_dir(env).expanduser().absolute())


def test_data_dirs_cli_would_expand_are_left_to_it() -> None:
    assert early.data_dir("~/d", {}) is None
    assert early.data_dir(None, {}) is None  # no HOME: cli asks the password database


LINES = [
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"a","version":"1"}}}',
    b'{"id":"x","method":"mcpServer/list","params":{}}',
    b'{"method":"initialized"}',
    b'{"id":1,"method":"m","params":{"x":[1.5,-2,null,true]}}',
    b'{"id":1,"method":"m","params":{"x":"\\ud800"}}',
    b'{"id":"\\ud800","method":"m"}',
    b'{"id":1,"method":"m","params":{"x":"caf\\u00e9"}}',
    b'{"id":1,"method":"m","params":{"x":NaN}}',
    b'{"id":1,"method":"m","params":{"x":1e999}}',
    b'{"id":true,"method":"m"}',
    b'{"id":1.0,"method":"m"}',
    b'{"id":null,"method":"m"}',
    b'{"id":1,"method":2}',
    b'{"id":1,"result":{}}',
    b'[{"id":1,"method":"m"}]',
    b'{"id":1,"method":"m"',
    b"\xff\xfe",
    b'{"id":1,"method":"m","params":' + b"[" * 129 + b"]" * 129 + b"}",
    b'{"id":1,"method":"m","params":' + b"[" * 100 + b"]" * 100 + b"}",
    "{\"id\":1,\"method\":\"m\",\"params\":{\"name\":\"caf\u00e9 \u2028\"}}".encode(),
]


def _agrees_with_wire(line: bytes) -> None:
    message = early._message(line)
    if message is None:
        return  # the processor judges it
    assert wire.decode(line) == message


@pytest.mark.parametrize("line", LINES)
def test_a_message_read_early_is_the_message_wire_decodes(line: bytes) -> None:
    _agrees_with_wire(line)


def test_plain_lines_are_read_early() -> None:
    assert [early._message(line) is not None for line in LINES[:4]] == [True] * 4


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {"method": st.sampled_from(["initialize", "mcpServer/list", "initialized"]) | json_values},
        optional={"id": st.integers() | st.text() | json_values, "params": json_values, "jsonrpc": json_values},
    )
)
def test_any_message_read_early_is_the_message_wire_decodes(message: dict[str, Any]) -> None:
    _agrees_with_wire(json.dumps(message).encode())
    _agrees_with_wire(json.dumps(message, ensure_ascii=False).encode(errors="surrogatepass"))


CHILD = """
import json, os, sys
from app_server.early import begin

started = begin(sys.argv[2:], os.environ)
loaded = sorted(m for m in ("asyncio", "anyio", "pydantic", "app_server.processor", "pathlib") if m in sys.modules)
sys.stderr.write(json.dumps({"loaded": loaded}) + "\\n")
sys.stderr.flush()
os.read(int(sys.argv[1]), 1)  # the test's go-ahead for the hand-over
prefix = started.handover()
rest = b""
while chunk := os.read(0, 1 << 16):
    rest += chunk
state = {"client": list(started.client[:2]), "initialized": started.initialized, "ended": started.ended}
sys.stderr.write(json.dumps({**state, "unread": (prefix + rest).decode()}) + "\\n")
"""

INITIALIZE = b'{"id":1,"method":"initialize","params":{"clientInfo":{"name":"a","version":"1"}}}\n'


def test_initialize_is_answered_before_the_daemon_imports_and_the_rest_is_handed_over_byte_for_byte(
    tmp_path: Path,
) -> None:
    go_read, go_write = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(go_read), "--data-dir", str(tmp_path / "data")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        pass_fds=(go_read,),
    )
    os.close(go_read)
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    try:
        child.stdin.write(INITIALIZE)
        child.stdin.flush()
        assert json.loads(child.stdout.readline())["result"]["dataDir"] == str(tmp_path / "data")
        assert json.loads(child.stderr.readline()) == {"loaded": []}
        child.stdin.write(b'{"method":"initialized"}\n\n{"id":2,"method":"mcpServer/list"}\n')
        child.stdin.flush()
        assert json.loads(child.stdout.readline()) == {"jsonrpc": "2.0", "id": 2, "result": {"data": []}}
        rest = b'{"id":3,"method":"mcpServer/create","params":{}}\n{"id":4,"method":"mcpServer/list"}\n{"id":5'
        child.stdin.write(rest)
        child.stdin.close()
        os.write(go_write, b"x")
        state = json.loads(child.stderr.readline())
        assert state == {"client": ["a", "1"], "initialized": True, "ended": False, "unread": rest.decode()}
        assert child.stdout.read() == b""  # nothing answered after the first line left to the processor
        assert child.wait(10) == 0
    finally:
        os.close(go_write)
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "result": {"data": []}},
        {"jsonrpc": "2.0", "id": "ïd \u2028", "result": {"userAgent": "x (Ünï/1)", "methods": ["a", "b"]}},
        {"jsonrpc": "2.0", "id": 2**70, "result": {"name": "lone \ud800 surrogate"}},
    ],
)
def test_handshake_lines_are_what_the_connection_encodes(message: dict[str, Any]) -> None:
    from app_server.connection import encode
    from app_server.handshake import line

    assert line(message) == encode(message)
