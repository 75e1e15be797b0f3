"""Requests through an open session (calls, reads, legacy subscriptions) and the typed errors they fail with."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

import structlog

from mcp_runtime import _sdk_compat
from mcp_runtime.catalog.schemas import non_finite
from mcp_runtime.oauth import needs_login
from mcp_runtime.session.errors import exit_description, is_resource_not_found, marked_reason, timeout_error
from mcp_runtime.session.ext_task_call import follow_task, is_task_handle
from mcp_runtime.session.refresh import list_tools
from mcp_runtime.session.state import dump
from mcp_runtime.session.task_call import UpstreamTask
from mcp_runtime.session.upstream_guard import result_detail
from protocol.jsonrpc import AppError

Progress = Callable[[float, float | None, str | None], Awaitable[None]]

if TYPE_CHECKING:
    from mcp import Client
    from mcp.shared.dispatcher import ProgressFnT

log = structlog.get_logger("mcp_runtime.requests")


async def call_tool(
    client: Client,
    name: str,
    arguments: dict[str, Any] | None,
    *,
    timeout_s: float,
    progress: Callable[[float, float | None, str | None], Awaitable[None]] | None,
    meta: dict[str, Any] | None,
    modern: bool,
    relisted: Callable[[], None],
    as_task: bool = False,
    task_started: Callable[[str], None] | None = None,
    server: str = "",
) -> dict[str, Any]:
    """``tools/call`` sent through the session ourselves: the result comes back even when its
    ``structuredContent`` does not match the ``outputSchema`` (the caller validates and reports). ``as_task``
    runs it as a 2025-11-25 task; a 2026 server may answer with a task handle of the tasks extension (SPEC §16):
    either is followed to its result here."""
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    if problems := non_finite({"arguments": arguments, "_meta": meta}):
        message = f"the arguments of {name} hold a number JSON cannot carry"
        raise AppError("invalidArguments", message, errors=problems, tool=name)
    session = client.session
    # The session checks every result against its negotiated version's schema before handing it over, so a
    # complete result is taken as the dict it arrived as, not built into a model and dumped back. Only a 2026
    # input-required result is typed: the SDK drives its rounds.
    checked = _sdk_compat.checked_result_adapter()

    async def send(responses: types.InputResponses | None, state: str | None, adapter: Any = checked) -> Any:
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(
                name=name, arguments=arguments, input_responses=responses, request_state=state, meta=meta
            )
        )
        return await session.send_request(
            request,
            adapter,
            request_read_timeout_seconds=timeout_s,
            progress_callback=cast("ProgressFnT | None", progress),
        )

    async def send_relisting(responses: types.InputResponses | None, state: str | None, adapter: Any = checked) -> Any:
        try:
            return await send(responses, state, adapter)
        except MCPError as exc:
            if exc.code != types.HEADER_MISMATCH or not modern:
                raise
            # 2026 recovery: the session's per-tool header map is stale; re-list, resend once.
            relisted()
            await list_tools(session)
            return await send(responses, state, adapter)

    async def typed_retry(responses: types.InputResponses | None, state: str | None) -> Any:
        return await send_relisting(responses, state, _sdk_compat.call_result_adapter())

    if as_task and not modern:
        from mcp_runtime.session.task_call import TASK_TTL_MS, call_as_task

        request = types.CallToolRequest(
            params=types.CallToolRequestParams(
                name=name, arguments=arguments, meta=meta, task=types.TaskMetadata(ttl=TASK_TTL_MS)
            )
        )
        raw = await call_as_task(client, request, timeout_s=timeout_s, progress=progress, started=task_started)
        types.CallToolResult.model_validate(raw, by_name=False)  # as the session checks a plain call's result
    else:
        raw = cast("dict[str, Any]", await send_relisting(None, None))
    if modern and is_task_handle(raw):  # the server made the call a task (the 2026 tasks extension)
        followed = follow_task(client, raw, server=server, timeout_s=timeout_s, progress=progress, started=task_started)
        raw = await followed
        types.CallToolResult.model_validate(raw, by_name=False)  # as the session checks a plain call's result
    if modern and raw.get("resultType") == "input_required":
        first = _sdk_compat.call_result_adapter().validate_python(raw, by_name=False)
        return dump(await _sdk_compat.drive_input_required(client, first, typed_retry))
    # As the model would give it: null members left out, isError always present.
    result = {key: value for key, value in raw.items() if value is not None}
    result.setdefault("isError", False)
    return result


async def resume_task(
    client: Client, task: UpstreamTask, *, server: str, timeout_s: float, progress: Progress | None
) -> dict[str, Any]:
    """Follow a task again from a new connection after the last one broke (SPEC §16), in the era it began in; the
    raw ``CallToolResult`` dict, checked like a first follow's."""
    import mcp_types as types

    from mcp_runtime.session import ext_task_call, task_call

    if task.modern:
        raw = await ext_task_call.resume_task(client, task, server=server, timeout_s=timeout_s, progress=progress)
    else:
        raw = await task_call.resume_task(client, task, timeout_s=timeout_s, progress=progress)
    types.CallToolResult.model_validate(raw, by_name=False)
    result = {key: value for key, value in raw.items() if value is not None}
    result.setdefault("isError", False)
    return result


async def subscribe_legacy(client: Client, uri: str, *, subscribe: bool) -> None:
    """2025 era: ``resources/subscribe`` / ``resources/unsubscribe``."""
    import mcp_types as types

    request: Any = (
        types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
        if subscribe
        else types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))
    )
    await client.session.send_request(request, types.EmptyResult)


async def resubscribe_legacy(client: Client, uris: Iterable[str], server: str) -> None:
    """A restarted 2025-era session re-subscribes what it can (best effort)."""
    for uri in sorted(uris):
        try:
            await subscribe_legacy(client, uri, subscribe=True)
        except Exception:
            log.debug("resubscribe_failed", server=server)


def map_error(
    exc: BaseException,
    server: str,
    transport: Any,
    *,
    timeout_ms: float,
    tool: str | None = None,
    method: str | None = None,
    uri: str | None = None,
) -> tuple[AppError, bool] | None:
    """The typed error of a failed request, and whether it also ends the session (lost, or a login lost); None for
    an exception no rule maps (a bug, which goes on as it is)."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT, URL_ELICITATION_REQUIRED
    from pydantic import ValidationError

    if isinstance(exc, AppError):
        return exc, False
    if isinstance(exc, MCPError):
        if (marked := marked_reason(exc.error)) is not None:
            if marked.reason == "invalidOutput":
                marked.details.setdefault("server", server)
            return marked, needs_login(marked.reason) or marked.reason == "connectionLost"
        if exc.code == URL_ELICITATION_REQUIRED:  # the thread runtime keeps only the elicitations it checked
            message = f"{server} asks for a URL to be visited before this call"
            raw = exc.error.data.get("elicitations") if isinstance(exc.error.data, dict) else None
            return AppError("urlElicitationRequired", message, server=server, elicitations=raw), False
        if exc.code == REQUEST_TIMEOUT:
            return timeout_error(server, timeout_ms, tool=tool, method=method), False
        if exc.code == CONNECTION_CLOSED:
            return AppError("connectionLost", exit_description(transport)), True
        if uri is not None and method == "resources/read" and is_resource_not_found(exc.code, exc.message):
            missing = AppError("unknownResource", f"{server} has no resource {uri[:200]}", uri=uri, server=server)
            return missing, False
        if (detail := _sdk_compat.http_parse_failure(exc.code, exc.message)) is not None:
            message = f"the server sent a malformed reply: {detail}"
            return AppError("invalidOutput", message, server=server, detail=detail), False
        message = exc.message[:1000]
        return AppError("upstreamError", message, server=server, mcpCode=exc.code, mcpMessage=message), False
    if isinstance(exc, ValidationError):
        detail = result_detail(exc)
        message = f"the server returned a malformed result: {detail}"
        return AppError("invalidOutput", message, server=server, detail=detail), False
    if isinstance(exc, TimeoutError):
        return timeout_error(server, timeout_ms, tool=tool, method=method), False
    return None
