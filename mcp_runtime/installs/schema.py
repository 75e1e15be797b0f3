"""Validation against the published schemas (the registry's ``server.json``, the bundle manifests), with errors in
plain words as ``{path, message}``."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import Draft7Validator

_HERE = Path(__file__).parent / "schemas"
MANIFEST_VERSIONS = ("0.2", "0.3", "0.4")
_MAX_ERRORS = 20


@cache
def _validator(name: str) -> Draft7Validator:
    from jsonschema import Draft7Validator  # heavy: only when something is validated

    return Draft7Validator(json.loads((_HERE / name).read_text(encoding="utf-8")))


def _issues(validator: Draft7Validator, document: Any) -> list[dict[str, str]]:
    found = sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    return [
        {"path": ".".join(str(p) for p in error.absolute_path) or "(document)", "message": error.message[:300]}
        for error in found[:_MAX_ERRORS]
    ]


def server_json_errors(document: Any) -> list[dict[str, str]]:
    """How a ``server.json`` misses the registry's published schema (empty: valid)."""
    return _issues(_validator("server.schema.json"), document)


def manifest_errors(document: Any) -> list[dict[str, str]]:
    """How a bundle manifest misses the published schema of its ``manifest_version`` (0.2-0.4)."""
    if not isinstance(document, dict):
        return [{"path": "(document)", "message": "the manifest is not a JSON object"}]
    version = document.get("manifest_version", document.get("dxt_version"))
    if version not in MANIFEST_VERSIONS:
        return [{"path": "manifest_version", "message": f"must be one of {', '.join(MANIFEST_VERSIONS)}"}]
    return _issues(_validator(f"mcpb-manifest-v{version}.schema.json"), document)
