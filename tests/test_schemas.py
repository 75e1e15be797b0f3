"""The checked-in JSON Schema must be exactly what the models generate, and never name a retired method."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from protocol.catalog import RETIRED, RETIRED_EVENTS
from tests.daemon_client import ROOT

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

    bundle = json.loads((SCHEMAS / "protocol.schema.json").read_text())
    assert set(bundle["methods"]) == set(METHODS)
    assert set(bundle["notifications"]) == set(NOTIFICATIONS)
    assert set(bundle["serverRequests"]) == set(SERVER_REQUESTS)
    for spec in [*bundle["methods"].values(), *bundle["serverRequests"].values()]:
        assert spec["params"] in bundle["$defs"] and spec["result"] in bundle["$defs"]
