"""Property-based fuzzing of the wire: generated hostile lines, sent to the real daemon on stdio and on a Unix
socket, are each answered as SPEC §1 says, and the connection keeps serving after every one of them.

The default run tries 200 lines per transport; ``-m slow`` runs a long soak of the same properties.
"""

from __future__ import annotations

import itertools
import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testing.daemon_client import JsonLinesClient, running_daemon, unix_client

pytestmark = pytest.mark.daemon

ANY = object()
"""Expectation: any well-formed answer (or none), as long as the connection keeps serving."""
NULL_ID = None
CODES = {-32700, -32600, -32601, -32602, -32603, -32001, -32002, -32800, *range(-32016, -32009)}
READ_ONLY_METHODS = ["mcpServer/list", "mcpServerStatus/list", "mcpTool/list", "thread/list"]
_ids = itertools.count(1)


@pytest.fixture(scope="module", params=["stdio", "socket"])
def client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JsonLinesClient]:
    data_dir = tmp_path_factory.mktemp("fuzz") / "data"
    data_dir.mkdir()
    if request.param == "stdio":
        with running_daemon(data_dir) as daemon:
            daemon.initialize()
            yield daemon
            assert daemon.process.poll() is None
        return
    with tempfile.TemporaryDirectory(prefix="mas-", dir="/tmp") as tmp:
        path = Path(tmp) / "d.sock"
        with running_daemon(data_dir, args=("--listen", f"unix:{path}")) as daemon:
            daemon.initialize()
            with unix_client(path) as other:
                other.initialize()
                yield other
                assert not other.eof
            assert daemon.process.poll() is None


# --- generated lines, each with the answer SPEC §1 requires: (code, id) or ANY -------------------------------


def _request(request_id: Any, method: Any = "mcpServer/list", params: bytes | None = None) -> bytes:
    head = b'{"jsonrpc":"2.0","id":%s,"method":%s' % (json.dumps(request_id).encode(), json.dumps(method).encode())
    return head + (b',"params":' + params if params is not None else b"") + b"}"


@st.composite
def deep_nesting(draw: st.DrawFn) -> tuple[bytes, Any]:
    depth = draw(st.integers(min_value=129, max_value=5000))
    opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]))
    inner = opener * depth + b"1" + closer * depth
    if draw(st.booleans()):
        return inner, (-32700, NULL_ID)
    return _request(next(_ids), params=b'{"x":' + inner + b"}"), (-32700, NULL_ID)


@st.composite
def non_finite_numbers(draw: st.DrawFn) -> tuple[bytes, Any]:
    token = draw(st.sampled_from([b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e999", b"1E+9999"]))
    return _request(next(_ids), params=b'{"x":[1,' + token + b"]}"), (-32700, NULL_ID)


@st.composite
def bad_utf8(draw: st.DrawFn) -> tuple[bytes, Any]:
    bad = draw(st.sampled_from([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"\x80", b"\xf8\x88\x80\x80"]))
    where = draw(st.sampled_from(["method", "params", "id"]))
    if where == "method":
        line = b'{"id":1,"method":"mcpServer/' + bad + b'"}'
    elif where == "id":
        line = b'{"id":"' + bad + b'","method":"mcpServer/list"}'
    else:
        line = _request(next(_ids), params=b'{"x":"' + bad + b'"}')
    return line, (-32700, NULL_ID)


lone_surrogates = st.integers(min_value=0xD800, max_value=0xDFFF).map(lambda c: b"\\u%04x" % c)


@st.composite
def surrogates(draw: st.DrawFn) -> tuple[bytes, Any]:
    escape = draw(lone_surrogates)
    where = draw(st.sampled_from(["method", "id", "params value", "params key"]))
    if where == "method":
        return b'{"id":5,"method":"mcpServer/' + escape + b'"}', (-32600, NULL_ID)
    if where == "id":
        return b'{"id":"x' + escape + b'","method":"mcpServer/list"}', (-32600, NULL_ID)
    request_id = next(_ids)
    params = b'{"names":["' + escape + b'"]}' if where == "params value" else b'{"' + escape + b'":1}'
    return _request(request_id, params=params), (-32602, request_id)


@st.composite
def huge_numbers(draw: st.DrawFn) -> tuple[bytes, Any]:
    digits = b"9" * draw(st.integers(min_value=4301, max_value=20_000))
    if draw(st.booleans()):
        return b'{"id":' + digits + b',"method":"mcpServer/list"}', (-32700, NULL_ID)
    return _request(next(_ids), params=b'{"limit":' + digits + b"}"), (-32700, NULL_ID)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@st.composite
def wrong_types(draw: st.DrawFn) -> tuple[bytes, Any]:
    kind = draw(st.sampled_from(["id", "method", "params", "not an object"]))
    if kind == "id":
        bad_id = draw(st.floats(allow_nan=False, allow_infinity=False) | st.booleans() | st.none() | st.lists(
            st.integers(), max_size=2) | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
        return b'{"id":' + json.dumps(bad_id).encode() + b',"method":"mcpServer/list"}', (-32600, NULL_ID)
    if kind == "method":
        bad_method = draw(st.integers() | st.booleans() | st.lists(st.text(), max_size=2) | st.floats(
            allow_nan=False, allow_infinity=False))
        request_id = next(_ids)
        return _request(request_id, method=bad_method), (-32600, request_id)
    if kind == "params":
        bad_params = draw(st.lists(json_values, max_size=3) | st.text() | st.integers() | st.booleans())
        request_id = next(_ids)
        return _request(request_id, params=json.dumps(bad_params).encode()), (-32602, request_id)
    value = draw(json_values.filter(lambda v: not isinstance(v, dict)))
    return json.dumps(value).encode(), (-32600, NULL_ID)


@st.composite
def plausible_requests(draw: st.DrawFn) -> tuple[bytes, Any]:
    """Well-formed envelopes with arbitrary params: any typed answer, echoing the id."""
    request_id = draw(st.integers(min_value=-(2**63), max_value=2**63) | st.text(max_size=20))
    method = draw(st.sampled_from(READ_ONLY_METHODS) | st.text(max_size=30))
    params = draw(json_values)
    return _request(request_id, method=method, params=json.dumps(params).encode()), (ANY, request_id)


junk = st.binary(max_size=400).map(lambda b: (b.replace(b"\n", b" "), (ANY, None)))

hostile_lines = st.one_of(
    deep_nesting(), non_finite_numbers(), bad_utf8(), surrogates(), huge_numbers(), wrong_types(),
    plausible_requests(), junk,
)

# --- the property -------------------------------------------------------------------------------------------

_REASON = re.compile(r"^[a-z][A-Za-z]*$")


def _well_formed(message: dict[str, Any]) -> None:
    assert "__unparsable__" not in message, message
    assert message.get("jsonrpc") == "2.0"
    if "error" in message:
        error = message["error"]
        assert error["code"] in CODES, error
        assert isinstance(error["message"], str)
        assert _REASON.match(error["data"]["reason"]), error
        assert "Traceback" not in json.dumps(error)


def _exchange(client: JsonLinesClient, line: bytes, due: Any) -> list[dict[str, Any]]:
    """Send the line, then a probe; return everything answered before the probe's (successful) answer.

    ``due``: the id of a well-formed request, whose answer may come after the probe's (it runs as a task)."""
    probe = f"probe-{next(_ids)}"
    client.send_raw(line + b"\n" + _request(probe) + b"\n")
    answer = client.wait_response(probe, timeout=30)
    assert "result" in answer, f"the connection stopped serving after {line[:200]!r}: {answer}"
    before: list[dict[str, Any]] = []
    if due is not None:
        before.append(client.wait_response(due, timeout=30))
    while True:
        try:
            before.append(client.wait_for(lambda m: True, timeout=0))
        except TimeoutError:
            return before


def _check(client: JsonLinesClient, line: bytes, expected: Any) -> None:
    code, request_id = expected
    answers = _exchange(client, line, request_id if code is ANY else None)
    for message in answers:
        _well_formed(message)
    if code is ANY:
        assert len(answers) <= 1, answers
        if answers and "id" in answers[0] and answers[0]["id"] is not None and request_id is not None:
            assert answers[0]["id"] == request_id
        return
    assert len(answers) == 1, f"{line[:200]!r} → {answers}"
    assert answers[0]["error"]["code"] == code, f"{line[:200]!r} → {answers[0]}"
    assert answers[0]["id"] == request_id


@given(case=hostile_lines)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_every_hostile_line_is_answered_and_the_connection_keeps_serving(
    client: JsonLinesClient, case: tuple[bytes, Any]
) -> None:
    _check(client, *case)


@pytest.mark.slow
@given(case=hostile_lines)
@settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_wire_soak(client: JsonLinesClient, case: tuple[bytes, Any]) -> None:
    _check(client, *case)
