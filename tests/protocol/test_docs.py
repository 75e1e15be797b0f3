"""The shipped protocol reference is the models' own: generated from them, complete, its links landing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from protocol.catalog import METHODS, NOTIFICATIONS, SERVER_REQUESTS
from protocol.docs_export import render
from protocol.jsonrpc import REASON_CODES
from testing.daemon_client import ROOT

pytestmark = pytest.mark.daemon

REFERENCE = ROOT / "docs" / "protocol.md"


def test_the_checked_in_reference_is_generated_from_the_models() -> None:
    assert render() == REFERENCE.read_text(), "regenerate with `make schemas`"


def test_the_reference_names_every_method_notification_and_reason_and_every_link_lands() -> None:
    text = REFERENCE.read_text()
    for name in [*METHODS, *NOTIFICATIONS, *SERVER_REQUESTS]:
        assert f"### `{name}`" in text, name
    for reason in REASON_CODES:
        assert f"| `{reason}` |" in text, reason
    anchors = {heading.lower() for heading in re.findall(r"^### `([A-Za-z0-9]+)`$", text, re.M)}
    links = set(re.findall(r"\]\(#([a-z0-9]+)\)", text))
    methods = {re.sub(r"[^a-z0-9_-]", "", m.lower()) for m in METHODS}
    assert links - anchors - methods == set()



DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "bench" / "README.md",
    ROOT / "clients" / "typescript" / "README.md",
    ROOT / "clients" / "settings" / "README.md",
    ROOT / "scripts" / "conformance" / "README.md",
]


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_docs_point_only_inside_the_project(doc: Path) -> None:
    text = doc.read_text()
    assert "../shared" not in text
    assert "SPEC" not in text, "the shipped docs stand on their own"
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://", "#", "mailto:")):
            continue
        path = (doc.parent / target.split("#", 1)[0]).resolve()
        assert path.is_relative_to(ROOT.resolve()), f"{target} leaves the project"
        assert path.exists(), f"{target} does not exist"


def stock_pythons() -> list[str]:
    """Interpreters without the venv's packages: the one the venv was made from, and the system's."""
    candidates = [str(Path(sys.base_prefix) / "bin" / "python3"), "/usr/bin/python3"]
    return sorted({path for path in candidates if Path(path).exists()})


@pytest.mark.parametrize("python", stock_pythons())
def test_the_readme_quick_start_reaches_a_tool_call_answering_a_form(python: str) -> None:
    """The README's host, run as written from a checkout with a stock ``python3``: a new host developer's first
    tool call."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Quick start for a host") :]
    script = re.search(r"```python\n(.*?)```", section, re.S)
    assert script is not None
    done = subprocess.run(
        [python, "-I", "-c", script.group(1)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "['demo']" in lines
    assert "form: Who are you? ['name', 'age']" in lines
    assert 'result: {"action": "accept", "content": {"name": "Ada", "age": 36}}' in lines
    assert any(line.startswith("notification: serverRequest/resolved") for line in lines)
    assert lines[-1] == "exit 0"
