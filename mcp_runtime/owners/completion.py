"""Argument completion (MCP ``completion/complete``) through an owner's connection: asked only of a server that
declares the ``completions`` capability, its answer bounded to what a suggestion list shows."""

from __future__ import annotations

from typing import Any

from mcp_runtime.session.slot import SessionSlot
from protocol.completion import CompletionParams, CompletionResult

MAX_VALUES = 100
MAX_VALUE_CHARS = 4096


async def complete(slot: SessionSlot, params: CompletionParams) -> CompletionResult:
    """The server's suggestions for ``params.argument``; ``{values: []}`` when it does not offer completions."""
    import mcp_types as types

    if "completions" not in (slot.state.capabilities or {}):
        return CompletionResult(values=[], has_more=False)
    ref: Any = (
        types.PromptReference(name=params.ref.name)
        if params.ref.type == "prompt"
        else types.ResourceTemplateReference(uri=params.ref.uri)
    )
    argument = {"name": params.argument.name, "value": params.argument.value}
    context = params.context.arguments if params.context is not None else None
    answer = (await slot.complete(ref, argument, context)).get("completion", {})
    values = [str(value)[:MAX_VALUE_CHARS] for value in answer.get("values", [])]
    total = answer.get("total")
    return CompletionResult(
        values=values[:MAX_VALUES],
        total=total if isinstance(total, int) and not isinstance(total, bool) else None,
        has_more=bool(answer.get("hasMore")) or len(values) > MAX_VALUES,
    )
