"""The checked-in JSON Schema must be exactly what the models generate, and never name a retired method."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from protocol.catalog import RETIRED, RETIRED_EVENTS
from testing.daemon_client import ROOT

pytestmark = pytest.mark.daemon

SCHEMAS = ROOT / "schemas"


def test_checked_in_schemas_match_generated(tmp_path: Path) -> None:
    out = tmp_path / "schemas"
    subprocess.run(
        [sys.executable, "-m", "app_server", "generate-json-schema", "--out", str(out)], cwd=ROOT, check=True
    )
    generated = {p.name: p.read_text() for p in out.glob("*.json")}
    checked_in = {p.name: p.read_text() for p in SCHEMAS.glob("*.json")}
    assert sorted(generated) == sorted(checked_in)
    drifted = [name for name in generated if generated[name] != checked_in[name]]
    assert drifted == [], f"regenerate with `make schemas`: {drifted}"


def test_generation_is_deterministic(tmp_path: Path) -> None:
    for out in (tmp_path / "a", tmp_path / "b"):
        subprocess.run([sys.executable, "-m", "app_server", "generate-json-schema", "--out", str(out)], cwd=ROOT,
                       check=True)
    assert {p.name: p.read_bytes() for p in (tmp_path / "a").iterdir()} == {
        p.name: p.read_bytes() for p in (tmp_path / "b").iterdir()
    }


def test_no_retired_name_in_any_schema() -> None:
    for path in SCHEMAS.glob("*.json"):
        text = path.read_text()
        for name in (*RETIRED, *RETIRED_EVENTS):
            assert f'"{name}"' not in text, f"{name} appears in {path.name}"


def test_bundle_covers_every_method_and_notification() -> None:
    import json

    from protocol.catalog import METHODS, NOTIFICATIONS, SERVER_REQUESTS
    from protocol.jsonrpc import REASON_CODES

    bundle = json.loads((SCHEMAS / "protocol.schema.json").read_text())
    tables = bundle["properties"]
    assert set(tables["methods"]["properties"]) == set(METHODS)
    assert set(tables["notifications"]["properties"]) == set(NOTIFICATIONS)
    assert set(tables["serverRequests"]["properties"]) == set(SERVER_REQUESTS)
    pairs = [*tables["methods"]["properties"].values(), *tables["serverRequests"]["properties"].values()]
    refs = [p["properties"][k]["$ref"] for p in pairs for k in ("params", "result")]
    refs += [n["$ref"] for n in tables["notifications"]["properties"].values()]
    for ref in refs:
        assert ref.removeprefix("#/$defs/") in bundle["$defs"], ref
    assert bundle["$defs"]["ErrorReason"]["enum"] == sorted(REASON_CODES)
    codes = tables["errorCodes"]["properties"]
    assert {reason: code["const"] for reason, code in codes.items()} == {r: int(c) for r, c in REASON_CODES.items()}


def test_no_property_titles_and_types_named_after_models() -> None:
    import json
    import re

    bundle = json.loads((SCHEMAS / "protocol.schema.json").read_text())
    for name, schema in bundle["$defs"].items():
        assert re.fullmatch(r"[A-Z][A-Za-z]*", name), name
        assert schema["title"] == name
        for prop in schema.get("properties", {}).values():
            assert "title" not in prop, name


def test_results_are_exported_as_sent_and_params_as_accepted() -> None:
    import json

    defs = json.loads((SCHEMAS / "protocol.schema.json").read_text())["$defs"]
    # Sent: a defaulted field is always present; a field left at None is omitted, never null.
    status = defs["ServerStatus"]
    assert {"tools", "authStatus", "resources"} <= set(status["required"])
    assert "lastError" not in status["required"] and status["properties"]["lastError"] == {"$ref": "#/$defs/ErrorInfo"}
    assert {"deferred", "alwaysVisible"} <= set(defs["ToolView"]["required"])
    # A listed config is the config as the user wrote it: its published shape is the accepted one.
    assert defs["ServerRecord"]["properties"]["config"] == {"$ref": "#/$defs/McpServerConfig"}
    # Accepted: a defaulted field may be omitted.
    assert "enabled" not in defs["StdioServerConfig"].get("required", [])
    # Required nullable fields stay nullable.
    assert defs["StartupStatusUpdated"]["properties"]["threadId"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    # Required for clients although the daemon answers its absence with threadRequired.
    for name in ("ToolCallParams", "ThreadIdParams"):
        assert "threadId" in defs[name]["required"]
        assert defs[name]["properties"]["threadId"] == {"minLength": 1, "type": "string"}
