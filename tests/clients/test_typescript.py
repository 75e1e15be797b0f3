"""The TypeScript bindings: generated from the models without drift, strictly typed, documented, and true to what
the daemon sends (each reason's ``error.data``).

The client package built on them (``clients/typescript``) is tested by its own Node tests against the real daemon
(``make test`` runs them after pytest).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from protocol.catalog import METHODS, NOTIFICATIONS, RETIRED, RETIRED_EVENTS, SERVER_REQUESTS
from protocol.errors import MODEL_OF_REASON
from protocol.jsonrpc import REASON_CODES
from testing.daemon_client import ROOT

pytestmark = pytest.mark.daemon

BINDINGS = ROOT / "schemas" / "typescript" / "index.ts"
TSC = ROOT / "node_modules" / ".bin" / "tsc"
STRICT = [
    "--strict", "--exactOptionalPropertyTypes", "--noUncheckedIndexedAccess",
    "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022",
]


def generate(out: Path) -> str:
    subprocess.run([sys.executable, "-m", "app_server", "generate-ts", "--out", str(out)], cwd=ROOT, check=True)
    return (out / "index.ts").read_text()


class Compiled:
    """One strict ``tsc`` program over every file the tests below check: a compile costs seconds, mostly loading the
    libraries, so the files share one and each test reads the diagnostics of the files it is about."""

    def __init__(self, files: dict[str, Path]) -> None:
        assert TSC.exists(), "TypeScript is a devDependency: run `npm ci` (make setup)"
        command = [str(TSC), *STRICT, "--noEmit", "--pretty", "false", "--types", "node", *map(str, files.values())]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=180)
        self.files = files
        self.output = done.stdout + done.stderr
        self.returncode = done.returncode
        assert done.returncode == 0 or self.output.strip(), "tsc failed without a diagnostic"

    def errors_in(self, *names: str, also: tuple[Path, ...] = ()) -> list[str]:
        return diagnostics(self.output, [self.files[name] for name in names] + list(also))


def diagnostics(output: str, files: list[Path]) -> list[str]:
    """The lines of ``tsc`` output about these files, and those that name no file but an error (options, the run)."""
    wanted = {path.resolve() for path in files}
    found = []
    for line in output.splitlines():
        where = re.match(r"^(.+?)\(\d+,\d+\): ", line)
        if where is None:
            if re.search(r"\berror\b", line):
                found.append(line)
        elif (ROOT / where.group(1)).resolve() in wanted:
            found.append(line)
    return found


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Compiled:
    """The freshly generated bindings, the type checks of the checked-in ones and json2ts's types from the bundle."""
    out = tmp_path_factory.mktemp("typescript")
    generate(out / "generated")
    json2ts = ROOT / "node_modules" / ".bin" / "json2ts"
    subprocess.run(
        [str(json2ts), "-i", str(ROOT / "schemas" / "protocol.schema.json"), "-o", str(out / "from-schema.ts")],
        cwd=ROOT, check=True, capture_output=True, timeout=120,
    )
    return Compiled({
        "generated": out / "generated" / "index.ts",
        "type checks": ROOT / "tests" / "clients" / "typescript" / "type_checks.ts",
        "from schema": out / "from-schema.ts",
    })


def test_checked_in_bindings_match_the_models_byte_for_byte(tmp_path: Path) -> None:
    first, second = generate(tmp_path / "a"), generate(tmp_path / "b")
    assert first == second
    assert first == BINDINGS.read_text(), "regenerate with `make schemas`"


def test_generated_bindings_compile_strictly(compiled: Compiled) -> None:
    assert compiled.errors_in("generated") == []


def test_bindings_type_what_the_daemon_does(compiled: Compiled) -> None:
    """Wrong params, retired methods, unknown reasons and closed sets fail to compile (``@ts-expect-error``)."""
    assert compiled.errors_in("type checks", also=(BINDINGS,)) == []


def test_the_shared_compile_is_clean_and_read_by_file(compiled: Compiled) -> None:
    assert compiled.returncode == 0, compiled.output
    output = "tests/a.ts(3,7): error TS2322: Type 'number' is not assignable.\nerror TS5023: Unknown compiler option."
    assert diagnostics(output, [ROOT / "tests" / "a.ts"]) == output.splitlines()
    assert diagnostics(output, [ROOT / "tests" / "b.ts"]) == ["error TS5023: Unknown compiler option."]


def test_bindings_export_each_name_once_and_nothing_retired() -> None:
    text = BINDINGS.read_text()
    names = re.findall(r"^export (?:interface|type|const) (\w+)", text, re.M)
    assert len(names) == len(set(names))
    assert {
        "RequestId", "ClientRequest", "ClientResponseByMethod", "ServerNotification", "ServerRequest",
        "ErrorReason", "ERROR_CODES", "ToolCallParams", "ToolCallResult", "ElicitationRequest", "StartupStatusUpdated",
    } <= set(names)
    assert not [name for name in names if re.search(r"\d", name)], "numbered type names"
    for method in (*METHODS, *NOTIFICATIONS, *SERVER_REQUESTS):
        assert f'method: "{method}"' in text
    for name in (*RETIRED, *RETIRED_EVENTS):
        assert f'"{name}"' not in text
    for reason in REASON_CODES:
        assert f'\n  | "{reason}"' in text
    # Index signatures only where the shape is open: JSON from MCP servers (schemas, `_meta`), env/header maps, and
    # things by name (tools, servers and their instructions, form fields and their answers).
    open_maps = set(re.findall(r"\[key: string\]: (\w+) ", text))
    assert open_maps == {
        "unknown", "string", "McpTool", "McpServerConfig", "PrimitiveSchemaDefinition", "ElicitationValue",
        "ServerInstructions",
    }


def _calls(callee_name: str) -> list[tuple[Path, ast.Call]]:
    found: list[tuple[Path, ast.Call]] = []
    for package in ("app_server", "mcp_runtime", "protocol"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                name = getattr(getattr(node, "func", None), "id", getattr(getattr(node, "func", None), "attr", ""))
                if isinstance(node, ast.Call) and name == callee_name:
                    found.append((path, node))
    return found


def test_every_reason_the_code_raises_is_in_the_reasons_table() -> None:
    """``ErrorReason`` is complete: each literal reason of an ``AppError``/``ErrorInfo`` in the code is listed."""
    found: set[str] = set()
    for _, node in _calls("AppError"):
        found |= {c.value for c in node.args[:1] if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    for _, node in _calls("ErrorInfo"):
        candidates = [k.value for k in node.keywords if k.arg == "reason"]
        found |= {c.value for c in candidates if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    assert found, "no reasons found: the scan is broken"
    assert sorted(found - set(REASON_CODES)) == []


# Raise sites whose error never reaches `error.data` without the detail (reason, details given): the OAuth login's own
# scope check ends the login, and its error travels as `ErrorInfo` (reason and message) in oauthLogin/completed.
_NOT_ERROR_DATA = {("insufficientScope", frozenset())}


def test_each_reason_s_data_model_describes_what_the_code_raises_it_with() -> None:
    """Every detail an ``AppError`` is raised with is a field of its reason's model, and every field the model
    requires is given at every raise site (sites that spread a dict of details are checked by the client tests)."""
    checked = 0
    for path, node in _calls("AppError"):
        reason = node.args[0] if node.args else None
        if not (isinstance(reason, ast.Constant) and isinstance(reason.value, str)):
            continue
        model = MODEL_OF_REASON[reason.value]
        aliases = {field.alias or name for name, field in model.model_fields.items()}
        given = {k.arg for k in node.keywords if k.arg is not None}
        where = f"{path.relative_to(ROOT)}:{node.lineno} {reason.value}"
        assert given <= aliases, f"{where}: {sorted(given - aliases)} not in {model.__name__}"
        required = {field.alias or name for name, field in model.model_fields.items() if field.is_required()}
        spread = any(k.arg is None for k in node.keywords)
        if not spread and (reason.value, frozenset(given)) not in _NOT_ERROR_DATA:
            assert required - {"reason"} <= given, f"{where}: raised without {sorted(required - given - {'reason'})}"
        checked += 1
    assert checked > 100, "the scan found too few raise sites"


def test_error_data_has_one_model_per_reason_in_the_schema() -> None:
    bundle = json.loads((ROOT / "schemas" / "protocol.schema.json").read_text())
    data = bundle["$defs"]["ErrorData"]
    assert data["discriminator"] == {"propertyName": "reason"}
    tags: list[str] = []
    for branch in data["oneOf"]:
        reason = bundle["$defs"][branch["$ref"].removeprefix("#/$defs/")]["properties"]["reason"]
        tags += [reason["const"]] if "const" in reason else reason["enum"]
    assert sorted(tags) == sorted(REASON_CODES)


def test_every_type_and_field_is_described() -> None:
    """Descriptions become doc comments (and the protocol reference); the few bare references are pinned by
    ``tests/protocol/test_schemas.py`` and described in their model's docstring."""
    bundle = json.loads((ROOT / "schemas" / "protocol.schema.json").read_text())
    bare = {
        ("ServerRecord", "config"), ("ServerStatus", "lastError"), ("StartupStatusUpdated", "threadId"),
        ("ThreadIdParams", "threadId"), ("ThreadReadParams", "threadId"), ("ToolCallParams", "threadId"),
    }
    undescribed = [name for name, schema in bundle["$defs"].items() if not schema.get("description")]
    fields = [
        (name, key)
        for name, schema in bundle["$defs"].items()
        for key, prop in schema.get("properties", {}).items()
        if not prop.get("description") and (name, key) not in bare
    ]
    assert undescribed == [] and fields == []
    text = BINDINGS.read_text()
    assert "/** The full name, `mcp__<server>__<tool>`: what a model calls it. */\n  name: string;" in text


def test_a_standard_generator_turns_the_json_schema_bundle_into_clean_types(compiled: Compiled) -> None:
    """``json-schema-to-typescript`` on the bundle (no flags): every model by its own name, none numbered."""
    out = compiled.files["from schema"]
    names = re.findall(r"^export (?:interface|type) (\w+)", out.read_text(), re.M)
    bindings = set(re.findall(r"^export (?:interface|type) (\w+)", BINDINGS.read_text(), re.M))
    assert len(names) == len(set(names)) and not [name for name in names if re.search(r"\d", name)]
    assert set(names) - {"McpAppServerProtocol"} <= bindings
    assert {"ToolCallParams", "ServerStatus", "ErrorReason", "StdioServerConfig"} <= set(names)
    assert compiled.errors_in("from schema") == []
