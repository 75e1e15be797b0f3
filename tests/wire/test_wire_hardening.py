"""Hostile lines on stdio and on a Unix socket: each gets the SPEC §1 answer and the connection keeps serving."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from testing.daemon_client import JsonLinesClient, running_daemon, unix_client

pytestmark = pytest.mark.daemon

MIB = 1 << 20


@contextmanager
def _socket_path() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="mas-", dir="/tmp") as tmp:  # sun_path is short
        yield Path(tmp) / "d.sock"


@pytest.fixture(scope="module", params=["stdio", "socket"])
def client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JsonLinesClient]:
    """An initialized client on stdio, or on the daemon's ``--listen`` socket: one daemon serves every test of
    the module, so each test also shows that the lines before it left the connection serving."""
    data_dir = tmp_path_factory.mktemp("wire") / "data"
    if request.param == "stdio":
        with running_daemon(data_dir) as daemon:
            daemon.initialize()
            yield daemon
            assert daemon.process.poll() is None, "a hostile line ended the daemon"
        return
    with _socket_path() as path, running_daemon(data_dir, args=("--listen", f"unix:{path}")) as daemon:
        daemon.initialize()
        with unix_client(path) as other:
            other.initialize()
            yield other
            assert not other.eof, "a hostile line closed the socket connection"
        assert daemon.process.poll() is None


def _answer_to(client: JsonLinesClient, line: bytes) -> dict:
    """Send one raw line and return the single error answer (an id-null answer is matched by arrival)."""
    client.send_raw(line + b"\n")
    return client.wait_for(lambda m: "error" in m and "method" not in m)


def _still_serves(client: JsonLinesClient) -> None:
    assert client.request("mcpServer/list") == {"data": []}


PARSE_ERRORS = {
    "deep array": b"[" * 982 + b"]" * 982,
    "deep object": b'{"a":' * 600 + b"1" + b"}" * 600,
    "129 levels": b"[" * 129 + b"]" * 129,
    "deep, unclosed": b"[" * 200_000,
    "NaN": b'{"id":1,"method":"mcpServer/list","params":{"x":NaN}}',
    "Infinity": b'{"id":1,"method":"mcpServer/list","params":{"x":Infinity}}',
    "-Infinity": b'{"id":1,"method":"mcpServer/list","params":{"x":-Infinity}}',
    "overflowing float": b'{"id":1,"method":"mcpServer/list","params":{"x":1e999}}',
    "invalid UTF-8": b'{"id":1,"method":"mcpServer/list","params":{"x":"\xff\xfe"}}',
    "truncated UTF-8": b'{"id":1,"method":"\xe2\x82"}',
    "junk": b"hello",
    "UTF-16 BOM": "\ufeff{}".encode("utf-16"),
}


@pytest.mark.parametrize("line", PARSE_ERRORS.values(), ids=PARSE_ERRORS.keys())
def test_lines_that_are_not_strict_json_are_parse_errors(client: JsonLinesClient, line: bytes) -> None:
    answer = _answer_to(client, line)
    assert answer["id"] is None
    assert answer["error"]["code"] == -32700 and answer["error"]["data"]["reason"] == "parseError"
    _still_serves(client)


def test_128_levels_are_within_the_bound(client: JsonLinesClient) -> None:
    answer = _answer_to(client, b"[" * 128 + b"]" * 128)
    assert answer["id"] is None and answer["error"]["data"]["reason"] == "invalidRequest"  # parsed: not an object
    brackets_in_a_string = b'{"id":7,"method":"mcpServer/list","params":{"unknown":["' + b"[" * 5000 + b'"]}}'
    client.send_raw(brackets_in_a_string + b"\n")
    assert client.wait_response(7)["error"]["data"]["reason"] == "invalidParams"  # reached the params model
    _still_serves(client)


@pytest.mark.parametrize(
    "line",
    [
        b'{"id":"\\ud800","method":"mcpServer/list"}',
        b'{"id":"a\\udfffb","method":"mcpServer/list"}',
        b'{"id":9,"method":"mcpServer/\\ud800"}',
        b'{"id":9,"method":"\\udc00"}',
    ],
    ids=["id", "id inside", "method", "method alone"],
)
def test_lone_surrogate_in_method_or_id_is_an_invalid_request_with_null_id(
    client: JsonLinesClient, line: bytes
) -> None:
    answer = _answer_to(client, line)
    assert answer["id"] is None
    assert answer["error"]["code"] == -32600 and answer["error"]["data"]["reason"] == "invalidRequest"
    _still_serves(client)


@pytest.mark.parametrize(
    "params",
    [
        b'{"name":"\\ud800","config":{"command":"x"}}',
        b'{"name":"ok","config":{"command":"x","env":{"\\udc00":"v"}}}',
        b'{"name":"ok","config":{"command":"x","args":["a","\\udbff"]}}',
    ],
    ids=["server name", "object key", "nested list"],
)
def test_lone_surrogate_in_params_is_invalid_params_with_the_request_id(client: JsonLinesClient, params: bytes) -> None:
    client.send_raw(b'{"id":"s1","method":"mcpServer/create","params":' + params + b"}\n")
    error = client.wait_response("s1")["error"]
    assert error["code"] == -32602 and error["data"]["reason"] == "invalidParams"
    assert client.request("mcpServer/list") == {"data": []}, "nothing was stored"


def test_a_surrogate_pair_is_ordinary_text(client: JsonLinesClient) -> None:
    client.send_raw(b'{"id":"\\ud83d\\ude00","method":"mcpServer/list"}\n')
    assert client.wait_response("\U0001f600")["result"] == {"data": []}


@pytest.mark.parametrize(
    "line",
    [
        b'{"id":1.5,"method":"mcpServer/list"}',
        b'{"id":true,"method":"mcpServer/list"}',
        b'{"id":null,"method":"mcpServer/list"}',
        b'{"id":{"a":1},"method":"mcpServer/list"}',
        b'{"id":3,"method":7}',
        b'{"id":3,"method":null,"params":{}}',
        b"[]",
        b"42",
        b'"text"',
    ],
)
def test_wrong_types_are_invalid_requests(client: JsonLinesClient, line: bytes) -> None:
    answer = _answer_to(client, line)
    assert answer["error"]["code"] == -32600 and answer["error"]["data"]["reason"] == "invalidRequest"
    assert answer["id"] in (None, 3)
    _still_serves(client)


def test_params_of_the_wrong_type_are_invalid_params(client: JsonLinesClient) -> None:
    for index, params in enumerate([b"[1]", b'"x"', b"7", b'{"names":{"deep":[[[[1]]]]}}']):
        client.send_raw(b'{"id":%d,"method":"mcpServer/list","params":%s}\n' % (index, params))
        assert client.wait_response(index)["error"]["data"]["reason"] == "invalidParams"
    _still_serves(client)


def test_huge_integer_ids_are_echoed_or_refused(client: JsonLinesClient) -> None:
    for big in (10**300, 2**64 + 1, -(2**63) - 1):  # past what a fast parser keeps as an integer
        client.send_raw(b'{"id":%d,"method":"mcpServer/list"}\n' % big)
        assert client.wait_response(big)["result"] == {"data": []}
    answer = _answer_to(client, b'{"id":%s,"method":"mcpServer/list"}' % (b"9" * 5000))
    assert answer["id"] is None and answer["error"]["code"] == -32700
    _still_serves(client)


def test_over_long_line_is_discarded_and_answered(client: JsonLinesClient) -> None:
    answer = _answer_to(client, b'{"id":1,"method":"mcpServer/list","params":{"x":"' + b"a" * (5 * MIB) + b'"}}')
    assert answer["id"] is None
    assert answer["error"]["code"] == -32600 and answer["error"]["data"]["reason"] == "messageTooLarge"
    _still_serves(client)


def test_a_large_line_under_the_cap_is_served(client: JsonLinesClient) -> None:
    names = b",".join(b'"n%d"' % i for i in range(300_000))  # ~2.6 MiB, decoded off the event loop
    client.send_raw(b'{"id":"big","method":"mcpServer/list","params":{"names":[' + names + b"]}}\n")
    response = client.wait_response("big")
    assert "result" in response or response["error"]["data"]["reason"] == "invalidParams"
    _still_serves(client)


def test_a_client_response_with_a_lone_surrogate_is_refused(client: JsonLinesClient) -> None:
    answer = _answer_to(client, b'{"id":"srv-999","result":{"action":"\\ud800"}}')
    assert answer["id"] is None and answer["error"]["data"]["reason"] == "invalidRequest"
    _still_serves(client)


def test_version_flag(tmp_path: Path) -> None:
    import subprocess
    import sys

    from app_server import __version__
    from testing.daemon_client import ROOT

    done = subprocess.run(
        [sys.executable, "-m", "app_server", "--version"],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        timeout=30,
    )
    assert done.returncode == 0
    assert done.stdout.decode().strip() == f"mcp-app-server {__version__}"


def test_unknown_initialize_capabilities_are_accepted(data_dir: Path) -> None:
    with running_daemon(data_dir) as daemon:
        result = daemon.initialize(experimental={"x": 1}, sampling={}, optOutNotificationMethods=["a/b"])
        assert result["serverInfo"]["name"] == "mcp-app-server"
        _still_serves(daemon)


class _Recorder:
    """Collects what a connection writes (the encoding is under test here, not the transport)."""

    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes, now: bool = False) -> None:
        self.written.append(data)

    def buffered(self) -> int:
        return 0


def test_replies_always_encode() -> None:
    """Text that is not valid Unicode (a lone surrogate from anywhere) is escaped, never an exception."""

    from pydantic import BaseModel

    from app_server.wire.connection import ClientConnection
    from protocol.encoding import line
    from protocol.jsonrpc import AppError

    class Result(BaseModel):
        text: str

    recorder = _Recorder()
    connection = ClientConnection("test", recorder)  # type: ignore[arg-type]
    connection.respond("a\udc80", Result(text="b\ud800"))
    connection.respond_error(7, AppError("invalidParams", "bad \udfff"))
    first, second = (json.loads(line) for line in recorder.written)
    assert first == {"jsonrpc": "2.0", "id": "a\udc80", "result": {"text": "b\ud800"}}
    assert second["error"]["message"] == "bad \udfff"
    assert line({"x": "\ud800"}) == b'{"x":"\\ud800"}\n'


def test_no_line_the_daemon_writes_is_longer_than_a_client_may_read() -> None:
    """An answer past ``MAX_OUTPUT_LINE_BYTES`` (the cap the typed client reads with) is ``responseTooLarge``
    instead, and a notification that large is not sent: the client's cap never drops an answer it is owed."""
    from app_server.wire.connection import ClientConnection, EncodedResult
    from protocol.constants import MAX_OUTPUT_LINE_BYTES

    recorder = _Recorder()
    connection = ClientConnection("test", recorder)  # type: ignore[arg-type]
    connection.initialized = True
    envelope = len(b'{"jsonrpc":"2.0","id":1,"result":}')
    fits = b'"' + b"x" * (MAX_OUTPUT_LINE_BYTES - envelope - 2) + b'"'
    connection.respond(1, EncodedResult(fits))
    connection.respond(2, EncodedResult(fits[:-1] + b'x"'))
    connection.notify_encoded("mcp:tools_updated", fits)
    assert len(recorder.written) == 2, "the oversized notification was sent"
    first, second = recorder.written
    assert len(first) - 1 == MAX_OUTPUT_LINE_BYTES and json.loads(first)["id"] == 1
    refused = json.loads(second)
    assert refused["id"] == 2
    assert refused["error"]["data"] == {"reason": "responseTooLarge", "limit": MAX_OUTPUT_LINE_BYTES}
