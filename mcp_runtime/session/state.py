"""What one session slot knows at a moment, and the status row both owners build from it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from mcp_runtime.oauth import needs_login
from protocol.jsonrpc import AppError
from protocol.server import ErrorInfo, ErrorInfoData
from protocol.status import AuthStatus, McpTool, RuntimeStatus, ServerStatus


@dataclass(frozen=True)
class ConnectionState:
    """A snapshot of one slot; replaced as a whole, so readers never see a half-updated catalog."""

    status: RuntimeStatus = "notStarted"
    server_info: dict[str, Any] | None = None
    capabilities: dict[str, Any] | None = None
    protocol_version: str | None = None
    tools: list[McpTool] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    resource_templates: list[dict[str, Any]] = field(default_factory=list)
    last_error: ErrorInfo | None = None
    stderr_tail: str | None = None
    dropped_tools: tuple[str, ...] = ()
    """Tools the server listed with invalid ``x-mcp-header`` annotations, left out of the catalog."""
    instructions: str | None = None


_KEPT_DETAILS = ("detail", "command", "searched", "variable", "step", "path")
"""The details of a failure a status row keeps (typed, and never a secret): what a host shows the user to fix."""


def error_info(error: AppError) -> ErrorInfo:
    kept = {key: error.details[key] for key in _KEPT_DETAILS if key in error.details}
    try:
        data = ErrorInfoData.model_validate(kept) if kept else None
    except ValueError:
        data = None  # a detail of another shape than the row publishes: the reason and message still say it
    return ErrorInfo(reason=error.reason, message=error.message, data=data)


def server_status(
    name: str, state: ConnectionState, auth: AuthStatus, runtime: RuntimeStatus | None = None
) -> ServerStatus:
    """The status row of a server from its slot's cached state (both owners report the same shape)."""
    return ServerStatus(
        name=name,
        runtime_status=runtime or state.status,
        server_info=state.server_info,
        server_capabilities=state.capabilities,
        protocol_version=state.protocol_version,
        tools={tool.name: tool for tool in state.tools},
        resources=state.resources,
        resource_templates=state.resource_templates,
        auth_status=auth,
        last_error=state.last_error or _dropped(state.dropped_tools),
        stderr_tail=state.stderr_tail,
        **bounded_instructions(state.instructions),
    )


MAX_INSTRUCTIONS_BYTES = 8192


def bounded_instructions(text: str | None) -> dict[str, Any]:
    """A server's ``instructions`` as a row carries them: at most 8 KiB (whole characters), marked when cut."""
    if not text:
        return {}
    raw = text.encode()
    if len(raw) <= MAX_INSTRUCTIONS_BYTES:
        return {"instructions": text}
    return {"instructions": raw[:MAX_INSTRUCTIONS_BYTES].decode(errors="ignore"), "instructions_truncated": True}


def _dropped(tools: tuple[str, ...]) -> ErrorInfo | None:
    """A connected server's row names the tools it listed but the catalog left out (SPEC §5)."""
    if not tools:
        return None
    return ErrorInfo(
        reason="invalidOutput",
        message=f"{len(tools)} tool(s) left out of the catalog: invalid x-mcp-header annotations",
        data=ErrorInfoData(dropped_tools=list(tools)),
    )


def lost_state(state: ConnectionState, loss: AppError, tail: str | None) -> ConnectionState:
    """A connected session's state once it is lost: what it knew, the loss, and whether only a login helps."""
    status: RuntimeStatus = "authenticationRequired" if needs_login(loss.reason) else "failed"
    return replace(state, status=status, last_error=error_info(loss), stderr_tail=tail)


def dump(model: Any) -> dict[str, Any]:
    data: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return data


def ended_state(
    state: ConnectionState,
    *,
    name: str,
    ready: bool,
    stopping: bool,
    lost: AppError | None,
    error: AppError | None,
    tail: str | None,
) -> tuple[ConnectionState, AppError | None, AppError | None]:
    """How a session ended: ``(state, start error, loss)``; a loss is reported to the owner.

    Before ready, a stop is ``cancelled`` and anything else the start's typed failure. After ready, a stop is
    a quiet ``notStarted``; anything else is a loss, its first recorded cause preferred unless the session
    itself reported ``connectionLost`` under a generic cause (a stored login that stopped working is never
    generic: only a login helps).
    """
    if not ready:
        if stopping:
            cancelled = AppError("cancelled", f"start of {name} was interrupted by a stop")
            return replace(state, status="cancelled", stderr_tail=tail), cancelled, None
        error = error or AppError("startupFailed", "server closed the connection during startup")
        status: RuntimeStatus = "authenticationRequired" if needs_login(error.reason) else "failed"
        return ConnectionState(status=status, last_error=error_info(error), stderr_tail=tail), error, None
    if stopping and lost is None:
        return replace(state, status="notStarted", stderr_tail=tail), None, None
    loss = lost or error or AppError("connectionLost", "the connection to the server closed")
    generic = loss.reason != "connectionLost" and not needs_login(loss.reason)
    if generic and error is not None and error.reason == "connectionLost":
        loss = error
    return lost_state(state, loss, tail), None, loss
