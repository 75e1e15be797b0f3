"""Log lines carry where an exception happened, never its message (it may quote a token or a config value)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from testing.daemon_client import ROOT

pytestmark = pytest.mark.daemon

PROGRAM = """
import sys

from app_server.process.logs import configure, get_logger

configure()
log = get_logger("test")


def parse(token):
    raise ValueError(f"bad token {token}")


try:
    try:
        parse(sys.argv[1])
    except ValueError as exc:
        raise ExceptionGroup("in a task group", [KeyError(sys.argv[1]), exc]) from exc
except ExceptionGroup:
    log.error("handler_failed", exc_info=True)
"""


def test_an_exception_is_logged_with_its_calls_and_types_but_no_message(tmp_path: Path) -> None:
    program = tmp_path / "failing.py"
    program.write_text(PROGRAM)
    done = subprocess.run(
        [sys.executable, str(program), "sekrit-token"],
        capture_output=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT)},
        timeout=60,
        check=True,
    )
    assert done.stdout == b""  # stdout carries protocol only
    [line] = done.stderr.decode().splitlines()
    assert "sekrit" not in line
    text = json.loads(line)["exception"]
    assert text.count("Traceback (most recent call last):") == 3  # the cause, the group, its other member
    assert "in parse" in text and 'raise ValueError(f"bad token {token}")' in text
    assert "builtins.ValueError" in text and "builtins.ExceptionGroup" in text and "builtins.KeyError" in text
