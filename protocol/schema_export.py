"""JSON Schema generated from the protocol models: one file per type plus a bundle, deterministic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from protocol.catalog import CLIENT_NOTIFICATIONS, METHODS, NOTIFICATIONS, SERVER_REQUESTS
from protocol.config import McpServerConfig


def _types() -> dict[str, Any]:
    """Every exported type by its schema title (model class name)."""
    types: dict[str, Any] = {"McpServerConfig": McpServerConfig}
    models: list[type[BaseModel]] = []
    for spec in (*METHODS.values(), *SERVER_REQUESTS.values()):
        models += [spec.params, spec.result]
    models += [spec.params for spec in (*NOTIFICATIONS.values(), *CLIENT_NOTIFICATIONS.values())]
    for model in models:
        types.setdefault(model.__name__, model)
    return dict(sorted(types.items()))


def _schema(tp: Any) -> dict[str, Any]:
    return TypeAdapter(tp).json_schema(by_alias=True, ref_template="#/$defs/{model}")


def bundle() -> dict[str, Any]:
    """One document: every type under ``$defs`` and the catalog (method → params/result)."""
    defs: dict[str, Any] = {}
    for name, tp in _types().items():
        schema = _schema(tp)
        defs.update(schema.pop("$defs", {}))
        defs[name] = schema
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "mcp-app-server protocol",
        "methods": {
            m: {"params": spec.params.__name__, "result": spec.result.__name__} for m, spec in sorted(METHODS.items())
        },
        "notifications": {m: spec.params.__name__ for m, spec in sorted(NOTIFICATIONS.items())},
        "serverRequests": {
            m: {"params": spec.params.__name__, "result": spec.result.__name__}
            for m, spec in sorted(SERVER_REQUESTS.items())
        },
        "$defs": dict(sorted(defs.items())),
    }


def _dump(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_schemas(out: Path) -> list[Path]:
    """Write ``<Type>.json`` for every type and ``protocol.schema.json``; stale files are removed."""
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, tp in _types().items():
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **_schema(tp)}
        path = out / f"{name}.json"
        path.write_text(_dump(schema))
        written.append(path)
    path = out / "protocol.schema.json"
    path.write_text(_dump(bundle()))
    written.append(path)
    for stale in set(out.glob("*.json")) - set(written):
        stale.unlink()
    return written
