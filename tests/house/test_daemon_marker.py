"""A test file that drives the real daemon says so with the ``daemon`` marker, not by its file name, so
``-m daemon`` and ``-m 'not daemon'`` split the suite into black-box and unit tests exactly."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DRIVES_THE_DAEMON = re.compile(r"running_daemon|testing\.daemon_client|\bdef test_\w+\([^)]*\bdaemon\b")


def _marked(text: str) -> bool:
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            return "pytest.mark.daemon" in ast.unparse(node.value)
    return False


def test_every_file_that_drives_the_daemon_is_marked() -> None:
    unmarked = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "tests").rglob("test_*.py"))
        if path != Path(__file__).resolve()
        if DRIVES_THE_DAEMON.search(text := path.read_text()) and not _marked(text)
    ]
    assert unmarked == [], f"drive the daemon without `pytestmark = pytest.mark.daemon`: {unmarked}"


def test_the_rule_sees_a_marked_list_and_a_missing_mark() -> None:
    assert _marked("import pytest\npytestmark = [pytest.mark.daemon, pytest.mark.slow]\n")
    assert not _marked("import pytest\npytestmark = pytest.mark.slow\n")
