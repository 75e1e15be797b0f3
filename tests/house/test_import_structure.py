"""The packages' import graph, lazy (function-level) imports included: no circle anywhere, one-way doors.

* ``protocol`` imports neither ``mcp_runtime`` nor ``app_server``; ``mcp_runtime`` never imports ``app_server``.
* ``app_server`` enters ``mcp_runtime`` only through its public surface (``mcp_runtime/__init__``).
* Nothing a handler depends on imports a handler (only the dispatcher, ``app_server.processor``, and the
  handler table itself may).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.daemon

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("protocol", "mcp_runtime", "app_server")
HANDLERS = "app_server.handlers"
DISPATCH = {"app_server.processor", HANDLERS}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Every module of ours ``path`` imports at run time, at module level or inside functions."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking_only(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return {name for name in found if name in modules}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := walk(nxt)) is not None:
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := walk(node)) is not None:
            return found
    return None


def _package_inits(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph without the edges ``pkg/__init__`` → its own submodules (the usual re-export, not a circle)."""
    return {name: {t for t in targets if not t.startswith(f"{name}.")} for name, targets in graph.items()}


def test_no_import_circle() -> None:
    cycle = _cycle(_package_inits(_graph()))
    assert cycle is None, " -> ".join(cycle or [])


def test_one_way_doors() -> None:
    for name, targets in _graph().items():
        if name.startswith("protocol"):
            assert not any(t.startswith(("mcp_runtime", "app_server")) for t in targets), name
        if name.startswith("mcp_runtime"):
            assert not any(t.startswith("app_server") for t in targets), name


def test_app_server_uses_only_the_public_surface() -> None:
    for name, targets in _graph().items():
        if name.startswith("app_server"):
            inner = sorted(t for t in targets if t.startswith("mcp_runtime."))
            assert not inner, f"{name} imports {inner}; import from mcp_runtime instead"


def test_nothing_below_a_handler_imports_a_handler() -> None:
    graph = _graph()
    handler_modules = {name for name in graph if name.startswith(f"{HANDLERS}.")}
    below: set[str] = set()
    todo = [t for h in handler_modules for t in graph[h] if not t.startswith(HANDLERS)]
    while todo:
        name = todo.pop()
        if name not in below:
            below.add(name)
            todo.extend(graph[name])
    offenders = {name: sorted(t for t in graph[name] if t.startswith(HANDLERS)) for name in below - DISPATCH}
    assert not {name: targets for name, targets in offenders.items() if targets}


def test_the_surface_loads_without_the_sdk() -> None:
    import subprocess
    import sys

    code = "import sys; from mcp_runtime import ConfigStore, MAX_MESSAGE_BYTES; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_every_export_resolves() -> None:
    import mcp_runtime

    for name in mcp_runtime.__all__:
        assert getattr(mcp_runtime, name) is not None, name


def test_runtime_units_stay_small() -> None:
    """The runtime core stays in small units: no module over 500 lines, and a class over 300 says why it is as
    large as its job in its docstring (a sentence starting "Large because"). The size is a prompt to look at
    cohesion, not a number to squeeze under."""
    for path in (ROOT / "mcp_runtime").rglob("*.py"):
        source = path.read_text()
        assert source.count("\n") <= 500, f"{path.name} is over 500 lines"
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                lines = (ast.get_docstring(node) or "").splitlines()
                reason = any(line.startswith("Large because") for line in lines)
                assert length <= 300 or reason, f"{path.name}: class {node.name} is {length} lines and says not why"


APP_LAYERS = (
    "app_server.wire",
    "app_server.events",
    "app_server.threads",
    "app_server.daemon",
    "app_server.context",
    "app_server.handlers",
    "app_server.processor",
    "app_server.process.startup",
    "app_server.__main__",
)
"""The daemon's parts from the bottom up: a module imports only from its own part or the parts below it."""
APP_LEAVES = ("app_server", "app_server.process", "app_server.process.logs", "app_server.process.options",
              "app_server.process.memory", "app_server.process.signals", "app_server.process.shutdown",
              "app_server.process.first_answer")  # fmt: skip
"""What every part may use (the logs, the command line's options, the memory policy, the stop signals, the shutdown
clock, the first answer): they import no other part."""
ROOF = "app_server.process.startup"
"""The program's top: it builds the daemon from the parts below; only ``__main__`` (the program) imports it."""


def _layer(name: str) -> int:
    for index, part in enumerate(APP_LAYERS):
        if name == part or name.startswith(f"{part}."):
            return index
    raise AssertionError(f"{name} belongs to no part of app_server; add it to APP_LAYERS or APP_LEAVES")


def test_app_server_imports_run_one_way() -> None:
    """wire → events → threads → daemon → context → handlers → processor → start-up: start-up builds the daemon and
    serves with the processor; nothing below start-up imports it, nothing below the processor dispatches."""
    for name, targets in _graph().items():
        if not name.startswith("app_server"):
            continue
        ours = {t for t in targets if t.startswith("app_server")}
        if name in APP_LEAVES:
            assert ours <= set(APP_LEAVES), f"{name} is shared by every part and imports {sorted(ours)}"
            continue
        upward = sorted(t for t in ours - set(APP_LEAVES) if _layer(t) > _layer(name))
        assert not upward, f"{name} imports {upward}, above it"


def test_the_roof_stands_apart_from_the_leaves() -> None:
    """``process/`` holds the roof and the leaves it uses: the roof is imported by the program alone, and the
    leaves never reach up to it."""
    importers = sorted(name for name, targets in _graph().items() if ROOF in targets)
    assert importers == ["app_server.__main__"]
    assert ROOF not in APP_LEAVES
