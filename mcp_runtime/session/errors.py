"""Whatever escapes the SDK, turned into one typed :class:`AppError` (SPEC §1).

Connect failures arrive as exception groups from the SDK's ``async with``; request failures as ``MCPError``.
Both are classified here, so the slot only decides what a failure means for its session (lost or not).
"""

from __future__ import annotations

from typing import Any

import structlog

from mcp_runtime.limits import MAX_SERVER_MESSAGE_BYTES
from mcp_runtime.platform import descriptors
from mcp_runtime.session.http import HttpTransport
from mcp_runtime.session.http_refusal import unreachable
from mcp_runtime.session.refusal import REASON_MARKER
from mcp_runtime.session.stdio import StdioTransport
from protocol.jsonrpc import REASON_CODES, AppError

log = structlog.get_logger("mcp_runtime.errors")

RESOURCE_NOT_FOUND = -32002
"""The MCP "resource not found" code. Servers also answer -32602 with a "not found" message, and the official
SDK's ``MCPServer`` answers -32602 "Unknown resource: <uri>"; all three mean the same to a client."""
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
_NOT_FOUND_WORDS = ("not found", "unknown resource")


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def marked_reason(error: Any) -> AppError | None:
    """A refusal our HTTP transport synthesized (redirect, 401, oversized body) back as its typed error."""
    data = getattr(error, "data", None)
    message = str(getattr(error, "message", ""))
    if isinstance(data, dict) and data.get(REASON_MARKER) in REASON_CODES:
        details = {k: v for k, v in data.items() if k != REASON_MARKER}
        return AppError(str(data[REASON_MARKER]), message, **details)
    if f"{REASON_MARKER}=responseTooLarge" in message:
        return AppError(
            "responseTooLarge",
            f"the response body is over the {MAX_SERVER_MESSAGE_BYTES}-byte limit",
            limit=MAX_SERVER_MESSAGE_BYTES,
        )
    return None


def exit_description(transport: Any) -> str:
    if isinstance(transport, StdioTransport):
        if transport.returncode is not None:
            return f"server process exited (exit code {transport.returncode})"
        return "server process exited"
    return "the server closed the connection"


def classify_session_failure(
    exc: BaseException,
    *,
    connected: bool,
    transport: Any,
    tail: dict[str, str],
    server: str,
    protocol: str = "auto",
) -> AppError:
    """One typed error for whatever ended (or refused to open) a session: an exception group, usually. A start
    refused over HTTP names the status and what the server said; one refused under a pinned protocol version says
    the server may not speak it."""
    import httpx2
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    found = leaves(exc)
    if not connected and any(descriptors.is_shortage(leaf) for leaf in found):
        return descriptors.too_many_open_files()
    for leaf in found:
        if isinstance(leaf, AppError):
            if leaf.reason == "startupFailed" and "stderrTail" not in leaf.details:
                leaf.details.update(tail)
            return leaf
    for leaf in found:
        if (marked := marked_reason(getattr(leaf, "error", None))) is not None:
            return marked
    for leaf in found:
        if isinstance(leaf, httpx2.TransportError):
            cause, detail = unreachable(leaf, getattr(transport, "url", ""))
            if connected:
                return AppError("connectionLost", f"the server stopped answering: {cause}", detail=detail)
            return AppError("startupFailed", cause, detail=detail)
    if not connected and (refused := _refused_handshake(found, transport, protocol)) is not None:
        return refused
    for leaf in found:
        if isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
            if connected:
                return AppError("connectionLost", exit_description(transport))
            if _says_out_of_descriptors(tail.get("stderrTail", "")):  # the server's own limit, which it inherits
                message = f"{exit_description(transport)} during startup: it ran out of file descriptors"
                return AppError("startupFailed", message, detail="tooManyOpenFiles", **tail)
            return AppError("startupFailed", f"{exit_description(transport)} during startup", **tail)
    leaf = found[0]
    if isinstance(leaf, MCPError):
        cause = f"the server refused the handshake: {leaf.message[:200]}"
    else:
        cause = f"{type(leaf).__name__}: {str(leaf)[:200]}"
    log.debug("server_connection_failed", server=server, error=type(leaf).__name__)
    if connected:
        return AppError("connectionLost", cause)
    return AppError("startupFailed", cause, **tail)


def _refused_handshake(found: list[BaseException], transport: Any, protocol: str) -> AppError | None:
    """A start the server answered with an error: over HTTP its status and body (the SDK gives a refused POST the
    code of a closed connection), and under a pinned version the hint that the server may not speak it."""
    from mcp.shared.exceptions import MCPError

    answered = next((leaf for leaf in found if isinstance(leaf, MCPError)), None)
    refusal = transport.refusals.last if isinstance(transport, HttpTransport) else None
    if answered is None and refusal is None:
        return None
    said = refusal.describe() if refusal is not None else (answered.message[:200] if answered else "")
    details: dict[str, Any] = {"httpStatus": refusal.status} if refusal is not None else {}
    version_said = "protocol version" in said.lower() or "unsupported" in said.lower()
    stateless_refused = refusal is not None and refusal.status in (400, 404, 405)
    modern_refused = protocol == "2026-07-28" and (stateless_refused or _not_found(answered))
    if modern_refused or (protocol != "auto" and version_said):
        message = f"the server refused the handshake ({said}): it may not speak protocol {protocol}, the version "
        message += "this server is pinned to; try protocol auto"
        return AppError("startupFailed", message, detail="unsupportedProtocolVersion", protocol=protocol, **details)
    if refusal is None:
        return None  # a stdio server's error answer: the generic wording below says it
    return AppError("startupFailed", f"the server refused the handshake: {said}", detail="httpStatus", **details)


def _not_found(error: Any) -> bool:
    return getattr(error, "code", None) == METHOD_NOT_FOUND


def _says_out_of_descriptors(stderr: str) -> bool:
    lowered = stderr.lower()
    return "emfile" in lowered or "too many open files" in lowered


def is_resource_not_found(code: int, message: str) -> bool:
    lowered = message.lower()
    return code == RESOURCE_NOT_FOUND or (code == INVALID_PARAMS and any(w in lowered for w in _NOT_FOUND_WORDS))


def timeout_error(server: str, timeout_ms: float, *, tool: str | None = None, method: str | None = None) -> AppError:
    """SPEC §1: a timeout names its server, the tool or method, and the deadline; the outcome is unknown."""
    what = tool or method or "the request"
    subject: dict[str, str] = {"tool": tool} if tool is not None else {"method": method or ""}
    return AppError(
        "timeout",
        f"{what} did not answer within {timeout_ms:.0f} ms; the request was cancelled upstream",
        server=server,
        timeoutMs=round(timeout_ms),
        **subject,
    )
