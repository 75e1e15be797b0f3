"""What each client scenario asks of a client once it has connected and listed tools, shared by both drivers.

Taken from the harness' reference client (``examples/clients/typescript/everything-client.ts`` of
``@modelcontextprotocol/conformance``): which tools to call with which arguments, what to answer an elicitation
with, and which scenarios want every tool, resource and prompt the client kept exercised. A step names tools by
what the server offers, so a client that left a tool out (an invalid ``x-mcp-header``, say) never calls it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Schema = dict[str, Any]
Tools = dict[str, Schema]
"""The tools a client kept: name → input schema."""


@dataclass(frozen=True)
class Steps:
    calls: Callable[[Tools, dict[str, Any]], list[tuple[str, dict[str, Any]]]] = lambda tools, context: []
    """The ``tools/call``s to make, in order, from the tools kept and the harness' context."""
    elicit: Callable[[Schema], dict[str, Any]] | None = None
    """The content a user accepts an elicitation's form with (None: no elicitation is expected)."""
    everything: bool = False
    """Also read every resource and get every prompt the server lists."""


def sample(schema: Schema) -> Any:
    """A value a form or a model would give for a property: its default, its first choice, or one of its type."""
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    return {"string": "x", "integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}.get(str(kind))


def arguments_for(schema: Schema) -> dict[str, Any]:
    """Arguments for the required properties of an input schema."""
    properties = schema.get("properties") or {}
    return {name: sample(properties.get(name) or {}) for name in schema.get("required") or []}


def defaults(schema: Schema) -> dict[str, Any]:
    """A form pre-filled with each property's default (SEP-1034), accepted as it is."""
    return {name: prop["default"] for name, prop in (schema.get("properties") or {}).items() if "default" in prop}


def _named(*calls: tuple[str, dict[str, Any]]) -> Callable[[Tools, dict[str, Any]], list[tuple[str, dict[str, Any]]]]:
    return lambda tools, context: list(calls)


def _from_context(tools: Tools, context: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(call["name"], call.get("arguments") or {}) for call in context.get("toolCalls") or []]


def _every_tool(tools: Tools, context: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(name, arguments_for(schema)) for name, schema in sorted(tools.items())]


def _echo_schema(tools: Tools, context: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    focal = tools.get("json_schema_2020_12_tool")
    return [] if focal is None else [("json_schema_echo", {"schema": focal})]


_MRTR = _named(
    ("test_mrtr_echo_state", {}),
    ("test_mrtr_unrelated", {}),
    ("test_mrtr_no_state", {}),
    ("test_mrtr_no_result_type", {}),
)

SCENARIOS: dict[str, Steps] = {
    "tools_call": Steps(calls=_named(("add_numbers", {"a": 5, "b": 3}))),
    "elicitation-sep1034-client-defaults": Steps(
        calls=_named(("test_client_elicitation_defaults", {})), elicit=defaults
    ),
    "sse-retry": Steps(calls=_named(("test_reconnection", {}))),
    "sep-2322-client-request-state": Steps(calls=_MRTR, elicit=lambda schema: {"confirmed": True}),
    "http-standard-headers": Steps(calls=_every_tool, everything=True),
    "http-custom-headers": Steps(calls=_from_context),
    "http-invalid-tool-headers": Steps(calls=_every_tool),
    "json-schema-2020-12-preservation": Steps(calls=_echo_schema),
}


def steps_for(scenario: str) -> Steps:
    """The steps of a scenario; every ``auth/*`` one calls ``test-tool`` once the client is authorized."""
    if scenario in SCENARIOS:
        return SCENARIOS[scenario]
    if scenario.startswith("auth/"):
        return Steps(calls=_named(("test-tool", {})))
    return Steps()
