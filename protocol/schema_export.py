"""JSON Schema generated from the protocol models: one bundle plus one file per type, deterministic.

Each model is exported in the direction it travels: params (and the client's answer to a server request) as the
daemon validates them, results, notifications and server requests as the daemon serializes them, so a field the
daemon always sends is required and a field the client may omit is optional. A model that looks different in the
two directions (defaults are filled in on the way out) gets a second type, ``<Model>Resolved``, for the way out.
No property carries a title, so a generator names types after the models and nothing else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from protocol.catalog import CLIENT_NOTIFICATIONS, METHODS, NOTIFICATIONS, SERVER_REQUESTS
from protocol.config import McpServerConfig
from protocol.envelope import JsonRpcErrorResponse, JsonRpcNotification, JsonRpcRequest, JsonRpcSuccessResponse
from protocol.jsonrpc import REASON_CODES

Mode = Literal["validation", "serialization"]
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
RESOLVED_SUFFIX = "Resolved"
_TYPE_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")


def _without_null(schema: JsonSchemaValue) -> JsonSchemaValue:
    """``X | None`` of a field that is omitted rather than sent as null: just ``X``."""
    branches = schema.get("anyOf")
    if not branches or {"type": "null"} not in branches:
        return schema
    rest = [branch for branch in branches if branch != {"type": "null"}]
    kept = {key: value for key, value in schema.items() if key not in ("anyOf", "default")}
    return {**kept, **rest[0]} if len(rest) == 1 else {**kept, "anyOf": rest}


class WireSchema(GenerateJsonSchema):
    """Pydantic's generator with the wire rules of ``protocol.base.WireModel`` applied.

    No field titles; a field left at ``None`` is omitted, never sent as null, so it is optional and not nullable;
    on the way out every field with a default is always sent, so it is required.
    """

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def field_is_required(self, field: Any, total: bool) -> bool:
        omitted_when_none = field.get("serialization_exclude_if") is not None
        if self.mode == "serialization":
            return not omitted_when_none
        return super().field_is_required(field, total)

    def model_field_schema(self, schema: core_schema.ModelField) -> JsonSchemaValue:
        json_schema = super().model_field_schema(schema)
        if schema.get("serialization_exclude_if") is not None:
            return _without_null(json_schema)
        return json_schema

    def tagged_union_schema(self, schema: core_schema.TaggedUnionSchema) -> JsonSchemaValue:
        """``oneOf`` of objects plus ``discriminator.propertyName``; the ``mapping`` (OpenAPI's) is left out: each
        branch already names its tag, and validators such as Ajv refuse a mapping."""
        json_schema = super().tagged_union_schema(schema)
        if "discriminator" in json_schema:
            json_schema["discriminator"].pop("mapping", None)
            json_schema["type"] = "object"
        return json_schema


@dataclass(frozen=True)
class Export:
    """One exported type: its name, what it is and the direction it travels in."""

    name: str
    tp: Any
    mode: Mode


ENVELOPES: dict[str, type[BaseModel]] = {
    "request": JsonRpcRequest,
    "notification": JsonRpcNotification,
    "successResponse": JsonRpcSuccessResponse,
    "errorResponse": JsonRpcErrorResponse,
}
"""The JSON-RPC message shapes, by the bundle property that names them."""


def exports() -> list[Export]:
    """Every params/result/notification/server-request model of the catalog, each in its direction, and the
    envelopes (as the daemon sends them)."""
    found: dict[tuple[str, Mode], Export] = {}

    def add(model: type[BaseModel] | Any, mode: Mode, name: str | None = None) -> None:
        export = Export(name or model.__name__, model, mode)
        found.setdefault((export.name, mode), export)

    add(McpServerConfig, "validation", "McpServerConfig")
    for envelope in ENVELOPES.values():
        add(envelope, "serialization")
    for spec in METHODS.values():
        add(spec.params, "validation")
        add(spec.result, "serialization")
    for spec in SERVER_REQUESTS.values():
        add(spec.params, "serialization")
        add(spec.result, "validation")
    for notification in NOTIFICATIONS.values():
        add(notification.params, "serialization")
    for notification in CLIENT_NOTIFICATIONS.values():
        add(notification.params, "validation")
    return [found[key] for key in sorted(found)]


def _rename(name: str) -> str:
    """Pydantic's ``X-Input``/``X-Output`` (a model that differs by direction) become ``X``/``XResolved``."""
    if name.endswith("-Input"):
        return name.removesuffix("-Input")
    if name.endswith("-Output"):
        return name.removesuffix("-Output") + RESOLVED_SUFFIX
    return name


def _rewrite_refs(node: Any) -> Any:
    """Refs renamed as their defs are; a described reference becomes ``{"allOf": [{"$ref": ...}], ...}``, since
    generators (json2ts) read keywords beside a bare ``$ref`` as a new type to number, not as the referenced one."""
    if isinstance(node, dict):
        rewritten = {
            key: (f"#/$defs/{_rename(value.removeprefix('#/$defs/'))}" if key == "$ref" else _rewrite_refs(value))
            for key, value in node.items()
        }
        if "$ref" in rewritten and len(rewritten) > 1:
            ref = rewritten.pop("$ref")
            return {"allOf": [{"$ref": ref}], **rewritten}
        return rewritten
    if isinstance(node, list):
        return [_rewrite_refs(item) for item in node]
    return node


def _reachable(defs: dict[str, Any], roots: set[str]) -> dict[str, Any]:
    """Only the defs an exported type refers to (pydantic also emits a direction nothing uses)."""
    seen: set[str] = set()
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        pending.extend(_refs(defs[name]))
    return {name: schema for name, schema in defs.items() if name in seen}


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [str(node["$ref"]).removeprefix("#/$defs/")] if "$ref" in node else []
        return found + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for item in node for ref in _refs(item)]
    return []


def _generate() -> tuple[dict[tuple[str, Mode], str], dict[str, Any]]:
    """(export name, mode) → def name, and every def, named and titled after its model."""
    inputs = [(export.name, export.mode, TypeAdapter(export.tp)) for export in exports()]
    tops, definitions = TypeAdapter.json_schemas(
        inputs, by_alias=True, ref_template="#/$defs/{model}", schema_generator=WireSchema
    )
    defs: dict[str, Any] = {}
    for name, schema in definitions.get("$defs", {}).items():
        renamed = _rename(name)
        if not _TYPE_NAME.fullmatch(renamed) or renamed in defs:
            raise ValueError(f"two protocol types would share the name {renamed!r} ({name}); rename one model")
        defs[renamed] = {**_rewrite_refs(schema), "title": renamed}
    names: dict[tuple[str, Mode], str] = {}
    for key, top in tops.items():
        ref = top.get("$ref", "")
        if not ref.startswith("#/$defs/") or len(top) != 1:
            raise ValueError(f"{key[0]} is not a named model")
        names[key] = _rename(ref.removeprefix("#/$defs/"))
    defs = _reachable(defs, set(names.values()))
    if "ErrorReason" not in defs or "ErrorData" not in defs:
        raise ValueError("ErrorReason and ErrorData must be reachable from the exported models")
    return names, dict(sorted(defs.items()))


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


def _pairs(
    table: dict[str, Any], names: dict[tuple[str, Mode], str], params_mode: Mode, result_mode: Mode
) -> dict[str, Any]:
    return {
        method: {
            "type": "object",
            "properties": {
                "params": _ref(names[(spec.params.__name__, params_mode)]),
                "result": _ref(names[(spec.result.__name__, result_mode)]),
            },
            "required": ["params", "result"],
            "additionalProperties": False,
        }
        for method, spec in sorted(table.items())
    }


def _closed(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": sorted(properties), "additionalProperties": False}


def bundle() -> dict[str, Any]:
    """One document whose root reaches every type: methods, notifications, server requests and error codes."""
    names, defs = _generate()
    notifications = {
        method: _ref(names[(spec.params.__name__, "serialization")]) for method, spec in sorted(NOTIFICATIONS.items())
    }
    error_codes = {reason: {"const": int(code)} for reason, code in sorted(REASON_CODES.items())}
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "McpAppServerProtocol",
        "description": (
            "The mcp-app-server protocol: each method's params and result, notifications, error reasons, envelopes."
        ),
        "type": "object",
        "properties": {
            "methods": _closed(_pairs(METHODS, names, "validation", "serialization")),
            "notifications": _closed(notifications),
            "serverRequests": _closed(_pairs(SERVER_REQUESTS, names, "serialization", "validation")),
            "errorReason": _ref("ErrorReason"),
            "errorCodes": _closed(error_codes),
            "envelopes": _closed({key: _ref(model.__name__) for key, model in ENVELOPES.items()}),
        },
        "required": ["envelopes", "errorCodes", "errorReason", "methods", "notifications", "serverRequests"],
        "additionalProperties": False,
        "$defs": defs,
    }


def _closure(name: str, defs: dict[str, Any]) -> dict[str, Any]:
    """The defs ``name`` refers to, transitively (itself excluded)."""
    seen: set[str] = set()
    pending = [defs[name]]
    while pending:
        text = json.dumps(pending.pop())
        for ref in sorted(set(re.findall(r'"#/\$defs/([A-Za-z0-9]+)"', text)) - seen - {name}):
            seen.add(ref)
            pending.append(defs[ref])
    return {ref: defs[ref] for ref in sorted(seen)}


def _dump(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_schemas(out: Path) -> list[Path]:
    """Write ``protocol.schema.json`` and ``<Type>.json`` for every type; stale files are removed."""
    out.mkdir(parents=True, exist_ok=True)
    document = bundle()
    defs = document["$defs"]
    written: list[Path] = []
    for name, schema in defs.items():
        single = {"$schema": SCHEMA_DIALECT, **schema}
        referenced = _closure(name, defs)
        if referenced:
            single["$defs"] = referenced
        path = out / f"{name}.json"
        path.write_text(_dump(single))
        written.append(path)
    path = out / "protocol.schema.json"
    path.write_text(_dump(document))
    written.append(path)
    for stale in set(out.glob("*.json")) - set(written):
        stale.unlink()
    return written
