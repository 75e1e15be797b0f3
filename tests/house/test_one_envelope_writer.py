"""One spelling of the JSON-RPC envelope: ``app_server/wire/envelope.py`` is the only module of the daemon that
writes ``"jsonrpc"``; the connection and the start-up reader build every line with it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from app_server.wire import envelope
from protocol.jsonrpc import AppError

pytestmark = pytest.mark.daemon

ROOT = Path(__file__).resolve().parents[2]
HOME = ROOT / "app_server" / "wire" / "envelope.py"


def _spellings(path: Path) -> list[int]:
    """Lines of ``path`` holding a string or bytes constant that spells a JSON-RPC envelope."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
            text = node.value.decode(errors="replace") if isinstance(node.value, bytes) else node.value
            if '"jsonrpc"' in text or text == "jsonrpc":
                found.append(node.lineno)
    return found


def test_only_the_envelope_module_spells_an_envelope() -> None:
    offenders = {
        str(path.relative_to(ROOT)): lines
        for path in (ROOT / "app_server").rglob("*.py")
        if path != HOME and (lines := _spellings(path))
    }
    assert offenders == {}
    assert _spellings(HOME), "the envelope module no longer spells the envelope this test looks for"


def test_each_envelope_reads_back_as_its_message() -> None:
    assert json.loads(envelope.result(b'"a"', b'{"x":1}')) == {"jsonrpc": "2.0", "id": "a", "result": {"x": 1}}
    assert json.loads(envelope.notification("m/n", b"{}")) == {"jsonrpc": "2.0", "method": "m/n", "params": {}}
    assert json.loads(envelope.request("srv-1", "m/r", b"[]")) == {
        "jsonrpc": "2.0",
        "id": "srv-1",
        "method": "m/r",
        "params": [],
    }
    error = json.loads(envelope.error(None, AppError("internal", "internal error")))
    assert error["id"] is None and error["error"]["data"]["reason"] == "internal"
