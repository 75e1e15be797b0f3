"""docs/architecture.md is the map of the house: every package and module it names in backticks exists, and the
deviations it lists hold (here: asyncio is reached only in the modules it names)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.daemon

ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "docs" / "architecture.md"
_PATH = re.compile(r"`([A-Za-z_][\w./-]*(?:/|\.py|\.ts|\.pyi))`")
ASYNCIO_MODULES = {
    "app_server/wire/transport.py",
    "app_server/wire/sockets.py",
    "mcp_runtime/platform/children.py",
    "mcp_runtime/platform/watcher.py",
    "mcp_runtime/session/stdio.py",
    "mcp_runtime/session/stdin.py",
    "mcp_runtime/session/stdout.py",
}
"""The modules docs/architecture.md names under "asyncio is reached under anyio"."""


def _named_paths() -> set[str]:
    """Every package (``name/``) and file (``name.py``, ``name.ts``) the map names: from the root when it starts
    with a top-level folder, else (a bare file name) beside the last path named before it in its paragraph or
    table row."""
    tops = {entry.name for entry in ROOT.iterdir()}
    found: set[str] = set()
    folder = ""
    for line in MAP.read_text().splitlines():
        if not line.strip() or line.startswith("|"):
            folder = ""
        for name in _PATH.findall(line):
            if name.split("/", 1)[0] in tops:
                found.add(name)
                folder = name if name.endswith("/") else name.rsplit("/", 1)[0] + "/" if "/" in name else ""
            elif "/" not in name and folder:
                found.add(folder + name)
            else:
                found.add(name)  # a path the map names from nowhere: it must exist from the root
    return found


def test_every_package_and_module_the_map_names_exists() -> None:
    named = _named_paths()
    assert "mcp_runtime/oauth/" in named and "app_server/wire/envelope.py" in named  # the map is read
    missing = sorted(path for path in named if not (ROOT / path).exists())
    assert missing == [], f"docs/architecture.md names what is gone: {missing}"


def _imports_asyncio(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(alias.name.split(".")[0] == "asyncio" for alias in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "asyncio":
            return True
    return False


def test_asyncio_stays_in_the_modules_the_map_names() -> None:
    reached = {
        str(path.relative_to(ROOT))
        for package in ("protocol", "app_server", "mcp_runtime")
        for path in (ROOT / package).rglob("*.py")
        if _imports_asyncio(path)
    }
    assert reached == ASYNCIO_MODULES
    text = MAP.read_text()
    assert all(Path(module).name in text for module in ASYNCIO_MODULES)
