"""The TypeScript bindings: generated from the models without drift, strictly typed, and good enough for a client.

The example client in ``clients/typescript`` is compiled with ``tsc --strict`` and run with Node against the real
daemon and the SDK fixture server (create, list, thread, tool call, elicitation, a typed error).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from protocol.catalog import METHODS, NOTIFICATIONS, RETIRED, RETIRED_EVENTS, SERVER_REQUESTS
from protocol.jsonrpc import REASON_CODES
from tests.daemon_client import ROOT
from tests.fixtures import FIXTURES

BINDINGS = ROOT / "schemas" / "typescript" / "index.ts"
TSC = ROOT / "node_modules" / ".bin" / "tsc"
STRICT = ["--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022"]


def generate(out: Path) -> str:
    subprocess.run([sys.executable, "-m", "app_server", "generate-ts", "--out", str(out)], cwd=ROOT, check=True)
    return (out / "index.ts").read_text()


def tsc(*args: str) -> None:
    assert TSC.exists(), "TypeScript is a devDependency: run `npm ci` (make setup)"
    done = subprocess.run([str(TSC), *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_checked_in_bindings_match_the_models_byte_for_byte(tmp_path: Path) -> None:
    first, second = generate(tmp_path / "a"), generate(tmp_path / "b")
    assert first == second
    assert first == BINDINGS.read_text(), "regenerate with `make schemas`"


def test_generated_bindings_compile_strictly(tmp_path: Path) -> None:
    generate(tmp_path)
    tsc(*STRICT, "--noEmit", str(tmp_path / "index.ts"))


def test_bindings_type_what_the_daemon_does() -> None:
    """Wrong params, retired methods, unknown reasons and closed sets fail to compile (``@ts-expect-error``)."""
    tsc(*STRICT, "--noEmit", str(ROOT / "tests" / "typescript" / "type_checks.ts"))


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
    # Index signatures only where the shape is open: JSON from MCP servers, env/header maps, tools and servers by name.
    open_maps = set(re.findall(r"\[key: string\]: (\w+) ", text))
    assert open_maps == {"unknown", "string", "McpTool", "McpServerConfig"}


def test_example_client_drives_the_daemon(tmp_path: Path) -> None:
    out, data_dir = tmp_path / "out", tmp_path / "data"
    tsc("-p", str(ROOT / "clients" / "typescript"), "--outDir", str(out))
    example = out / "clients" / "typescript" / "example.js"
    done = subprocess.run(
        ["node", str(example), sys.executable, str(FIXTURES / "fixture_server.py"), str(data_dir)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["server"] == "mcp-app-server"
    assert summary["servers"] == ["fx"] and summary["commands"] == [sys.executable]
    assert summary["thread"] == "active"
    assert summary["echo"] == {"type": "text", "text": "hi"}
    assert json.loads(summary["elicited"]["text"]) == {"action": "accept", "content": {"name": "Ada", "age": 36}}
    assert summary["reason"] == "unknownThread" and summary["code"] == -32010
    assert "fx ready" in done.stderr


def test_every_reason_the_code_raises_is_in_the_reasons_table() -> None:
    """``ErrorReason`` is complete: each literal reason of an ``AppError``/``ErrorInfo`` in the code is listed."""
    import ast

    found: set[str] = set()
    for package in ("app_server", "mcp_runtime", "protocol"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Call):
                    continue
                callee = getattr(node.func, "id", getattr(node.func, "attr", ""))
                candidates = node.args[:1] if callee == "AppError" else []
                candidates += [k.value for k in node.keywords if k.arg == "reason" and callee == "ErrorInfo"]
                found |= {c.value for c in candidates if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    assert found, "no reasons found: the scan is broken"
    assert sorted(found - set(REASON_CODES)) == []


def test_a_standard_generator_turns_the_json_schema_bundle_into_clean_types(tmp_path: Path) -> None:
    """``json-schema-to-typescript`` on the bundle (no flags): every model by its own name, none numbered."""
    out = tmp_path / "from-schema.ts"
    json2ts = ROOT / "node_modules" / ".bin" / "json2ts"
    subprocess.run(
        [str(json2ts), "-i", str(ROOT / "schemas" / "protocol.schema.json"), "-o", str(out)],
        cwd=ROOT, check=True, capture_output=True, timeout=120,
    )
    names = re.findall(r"^export (?:interface|type) (\w+)", out.read_text(), re.M)
    bindings = set(re.findall(r"^export (?:interface|type) (\w+)", BINDINGS.read_text(), re.M))
    assert len(names) == len(set(names)) and not [name for name in names if re.search(r"\d", name)]
    assert set(names) - {"McpAppServerProtocol"} <= bindings
    assert {"ToolCallParams", "ServerStatus", "ErrorReason", "StdioServerConfig"} <= set(names)
    tsc(*STRICT, "--noEmit", "--types", "node", str(out))
