"""Argument completion (MCP ``completion/complete``) through an owner's connection: asked only of a server that
declares the ``completions`` capability, its answer bounded to what a suggestion list shows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.completion import CompletionParams, CompletionResult

if TYPE_CHECKING:
    from mcp_runtime.owners.base import SlotOwner
    from mcp_runtime.session.slot import SessionSlot

MAX_VALUES = 100
MAX_VALUE_CHARS = 4096


async def complete(owner: SlotOwner, params: CompletionParams) -> CompletionResult:
    """The server's suggestions for ``params.argument`` through ``owner``'s connection (an owner's method);
    ``{values: []}`` when it does not offer completions."""
    async with owner._use(params.server):
        return await _complete(await owner._ready_slot(params.server), params)


async def _complete(slot: SessionSlot, params: CompletionParams) -> CompletionResult:
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
