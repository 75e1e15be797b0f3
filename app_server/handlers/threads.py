"""``thread/start|list|read|archive``, ``thread/context/read`` and ``mcpServer/tool/call`` (SPEC §4, §6, §7).

The tool call resolves its thread's runtime (never guessing the owner) and gives it two callbacks bound to the
calling connection: progress (``mcpServer/tool/progress`` to that connection only) and ``ask`` for a
server-originated elicitation (``mcpServer/elicitation/request`` to that connection only, answered by exactly
that server-request id on that connection, then ``serverRequest/resolved`` before anything goes upstream). An
answer that does not fit the form goes upstream as ``cancel``, and the resolved notification says why. The
result gets its projection here: blobs and long projection texts go to the thread's archive.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio

from app_server.archive import ThreadArchive
from app_server.connection import EncodedResult, compact, next_server_request_id
from app_server.daemon import RequestContext
from app_server.handlers.registry import method
from mcp_runtime import CANCELLED, clip, media, projection_text, resolve_answer, stored, utf8
from protocol.elicitation import ElicitationRequest, ServerRequestResolved, ValidationIssue
from protocol.jsonrpc import AppError
from protocol.thread import (
    ContextReadParams,
    ContextReadResult,
    ThreadIdParams,
    ThreadListParams,
    ThreadListResult,
    ThreadReadResult,
    ThreadResult,
    ThreadStartParams,
)
from protocol.tool import ToolCallParams, ToolProgress


@method("thread/start", ThreadStartParams)
def thread_start(ctx: RequestContext, params: ThreadStartParams) -> ThreadResult:
    return ThreadResult(thread=ctx.daemon.threads.start(params, ctx.connection))


@method("thread/list", ThreadListParams)
async def thread_list(ctx: RequestContext, params: ThreadListParams) -> ThreadListResult:
    data, next_cursor = await ctx.daemon.threads.page(params.cursor, params.limit)
    return ThreadListResult(data=data, next_cursor=next_cursor)


@method("thread/read", ThreadIdParams)
def thread_read(ctx: RequestContext, params: ThreadIdParams) -> ThreadReadResult:
    thread, facts = ctx.daemon.threads.read(params.thread_id, ctx.connection)
    return ThreadReadResult(thread=thread, facts=facts)


@method("thread/archive", ThreadIdParams)
async def thread_archive(ctx: RequestContext, params: ThreadIdParams) -> ThreadResult:
    return ThreadResult(thread=await ctx.daemon.threads.archive(params.thread_id))


@method("mcpServer/tool/call", ToolCallParams)
async def tool_call(ctx: RequestContext, params: ToolCallParams) -> EncodedResult:
    runtime = ctx.daemon.thread_runtime(params.thread_id, ctx.connection)  # type: ignore[arg-type]
    thread_id = runtime.thread_id
    connection = ctx.connection

    async def progress(value: float, total: float | None, message: str | None) -> None:
        connection.notify(
            "mcpServer/tool/progress",
            ToolProgress(
                thread_id=thread_id,
                turn_id=params.turn_id,
                request_id=ctx.request_id,
                server=params.server,
                tool=params.tool,
                progress=value,
                total=total,
                message=message,
            ),
        )

    async def ask(request: ElicitationRequest) -> dict[str, Any]:
        """Ask the calling connection only; the answer is judged against the form before it goes upstream."""
        request_id = next_server_request_id()
        resolution = CANCELLED
        try:
            response = await connection.request("mcpServer/elicitation/request", request, request_id)
            if "result" in response:
                resolution = resolve_answer(response["result"], request.requested_schema)
        except AppError:
            resolution = CANCELLED
        finally:
            # Resolved (answered, connection closed, or cancelled by the call's timeout/cancellation): tell that
            # connection, with why when the daemon chose the cancel, before the answer is passed upstream.
            connection.notify(
                "serverRequest/resolved",
                ServerRequestResolved(
                    thread_id=thread_id,
                    request_id=request_id,
                    action=resolution.action,
                    reason=resolution.reason,
                    errors=[ValidationIssue.model_validate(e) for e in resolution.errors] or None,
                ),
            )
        return resolution.answer()

    result, encoded = await runtime.call_tool(
        params.server,
        params.tool,
        params.arguments,
        turn_id=params.turn_id,
        timeout_ms=params.timeout_ms,
        meta=params.meta,
        progress=progress,
        ask=ask,
    )
    projection = await _project(ctx.daemon.threads.context_archive, thread_id, result)
    return EncodedResult(with_projection(encoded, projection))


def with_projection(encoded: bytes, projection: dict[str, Any]) -> bytes:
    """The ``ToolCallResult`` JSON: the result's own JSON (serialized once, by the runtime) with ``projection``
    appended as its last member; a ``projection`` member a server sent is replaced, as the model would."""
    if b'"projection"' in encoded:
        result = json.loads(encoded)
        result.pop("projection", None)
        encoded = compact(result)
    joint = b"," if encoded != b"{}" else b""
    return b'%s%s"projection":%s}' % (encoded[:-1], joint, compact(projection))


async def _project(archive: ThreadArchive, thread_id: str, result: dict[str, Any]) -> dict[str, Any]:
    """Archive every blob and a projection text over 16 KiB; the model gets the clipped text and the refs."""
    blobs = media(result.get("content") or [])
    by_index = {blob.index: stored(archive.new_ref(), blob.kind, blob.mime_type, blob.data) for blob in blobs}
    entries = [(by_index[blob.index], blob.data) for blob in blobs]
    full, mime_type = projection_text(result, by_index)
    text, truncated = clip(full)
    if truncated:
        encoded = utf8(full)
        entries.append((stored(archive.new_ref(), "text", mime_type, encoded), encoded))
    if entries:  # most results archive nothing: no worker-thread hop on the hot path
        await anyio.to_thread.run_sync(archive.put, thread_id, entries)
    return {"text": text, "truncated": truncated, "refs": [meta.view() for meta, _ in entries]}


@method("thread/context/read", ContextReadParams)
async def context_read(ctx: RequestContext, params: ContextReadParams) -> ContextReadResult:
    """A byte range of an archived projection (as text) or blob (as base64); ``nextOffset`` null at the end."""
    thread_id = ctx.daemon.threads.get(params.thread_id).record.id
    archive = ctx.daemon.threads.context_archive
    chunk = await anyio.to_thread.run_sync(archive.read, thread_id, params.ref, params.offset, params.limit)
    end = min(params.offset, chunk.total) + len(chunk.data)
    data = chunk.data.decode() if chunk.kind == "text" else base64.b64encode(chunk.data).decode()
    return ContextReadResult(
        ref=params.ref,
        offset=params.offset,
        data=data,
        next_offset=end if end < chunk.total else None,
        bytes=chunk.total,
        mime_type=chunk.mime_type,
    )

