"""Judging each line a stdio MCP server writes before the SDK session sees it (SPEC §1).

The SDK drops a message it cannot validate, which left a call with a malformed reply waiting out its whole
timeout: a line that still names a request in flight becomes an ``invalidOutput`` error for that call at
once, and any other unusable line is skipped and counted, the connection kept.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import structlog

from mcp_runtime.session.refusal import REASON_MARKER

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

log = structlog.get_logger("mcp_runtime.upstream")

MAX_DETAIL = 300
"""``data.detail`` is cut here: it says what was wrong, never echoes the reply."""
MAX_TRACKED = 4096
"""Ids of requests in flight remembered at most (a request abandoned without a cancel must not leak)."""
INTERNAL_ERROR = -32603
_ID_VALUE = rb'(?P<id>-?\d{1,19}|"(?:[^"\\]|\\.){0,256}")'
_VERSION = rb'"jsonrpc"\s*:\s*"2\.0"\s*'
_LEADING_ID = re.compile(rb'\s*\{\s*(?:' + _VERSION + rb',\s*)?"id"\s*:\s*' + _ID_VALUE + rb'\s*[,}]')
"""An id that opens a message (``{"jsonrpc":"2.0","id":7,…``): only the top level's first members sit there."""
_TRAILING_ID = re.compile(rb',\s*"id"\s*:\s*' + _ID_VALUE + rb'\s*(?:,\s*' + _VERSION + rb')?\}\s*$')
"""An id that closes a message (``…,"jsonrpc":"2.0","id":7}``, as the TypeScript SDK writes a result)."""


class SkippedLine(Exception):
    """Passed to the session's message handler for each unusable line; ``count`` is the running total."""

    def __init__(self, count: int) -> None:
        super().__init__(f"skipped {count} unusable line(s) from the server")
        self.count = count


def note_skipped(skipped: SkippedLine, server: str) -> None:
    """Log the counter at 1, 2, 4, 8 …: visible in the logs, yet a flood of junk costs a few lines only."""
    if skipped.count & (skipped.count - 1) == 0:
        log.warning("server_lines_skipped", server=server, skippedLines=skipped.count)


class _Sdk(NamedTuple):
    coerce_request_id: Callable[[Any], Any]
    session_message: Callable[[Any], SessionMessage]
    request: type[Any]
    notification: type[Any]
    answers: tuple[type[Any], ...]
    message_adapter: Any


@functools.cache
def _sdk() -> _Sdk:
    """The SDK names used per message, looked up once (the module itself loads before the SDK does)."""
    from mcp.shared.dispatcher import coerce_request_id
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse, jsonrpc_message_adapter

    answers = (JSONRPCResponse, JSONRPCError)
    adapter = jsonrpc_message_adapter
    return _Sdk(coerce_request_id, SessionMessage, JSONRPCRequest, JSONRPCNotification, answers, adapter)


class UpstreamGuard:
    """Per connection: the ids of our requests in flight, and the count of skipped lines."""

    def __init__(self) -> None:
        self._in_flight: dict[Any, None] = {}
        self.skipped = 0

    def sent(self, message: Any) -> None:
        """Note an outgoing message: a request is in flight until answered or cancelled."""
        sdk = _sdk()
        if isinstance(message, sdk.request):
            if len(self._in_flight) >= MAX_TRACKED:
                del self._in_flight[next(iter(self._in_flight))]
            self._in_flight[sdk.coerce_request_id(message.id)] = None
        elif isinstance(message, sdk.notification) and message.method == "notifications/cancelled":
            request_id = (message.params or {}).get("requestId")
            if isinstance(request_id, int | str):
                self._in_flight.pop(sdk.coerce_request_id(request_id), None)

    def received(self, line: bytes) -> SessionMessage | Exception:
        """What the session gets for one stdout line: the message, an error for its call, or a skip."""
        sdk = _sdk()
        try:
            message = sdk.message_adapter.validate_json(line, by_name=False)
        except ValueError as exc:
            return self._malformed(line, exc)
        if isinstance(message, sdk.answers) and message.id is not None:
            self._in_flight.pop(sdk.coerce_request_id(message.id), None)
        return sdk.session_message(message)

    def oversized(self, head: bytes, tail: bytes, size: int, limit: int) -> SessionMessage | Exception:
        """A line past the limit, read and let go: the request it answers (its id found at either end of the line,
        where JSON-RPC writers put it) fails ``responseTooLarge`` with the size; a line answering nothing in
        flight is skipped. The connection goes on either way."""
        from mcp.shared.message import SessionMessage
        from mcp_types import ErrorData, JSONRPCError

        key = self._oversized_id(head, tail)
        if key is None:
            return self._skip()
        del self._in_flight[key]
        error = ErrorData(
            code=INTERNAL_ERROR,
            message=f"the server's answer is {size} bytes, over the {limit}-byte limit",
            data={REASON_MARKER: "responseTooLarge", "size": size, "limit": limit},
        )
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=key, error=error))

    def _oversized_id(self, head: bytes, tail: bytes) -> Any:
        from mcp.shared.dispatcher import coerce_request_id

        for match in (_LEADING_ID.match(head), _TRAILING_ID.search(tail)):
            if match is None:
                continue
            try:
                value = json.loads(match.group("id"))
            except ValueError:
                continue
            if isinstance(value, int | str) and not isinstance(value, bool):
                key = coerce_request_id(value)
                if key in self._in_flight:
                    return key
        return None

    def _skip(self) -> SkippedLine:
        self.skipped += 1
        return SkippedLine(self.skipped)

    def _malformed(self, line: bytes, exc: ValueError) -> SessionMessage | Exception:
        from mcp.shared.dispatcher import coerce_request_id
        from mcp.shared.message import SessionMessage
        from mcp_types import ErrorData, JSONRPCError

        problem: str | None = None
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            text = line.decode("utf-8", errors="replace")
            problem = "the reply is not valid UTF-8"
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            return self._skip()
        request_id = parsed.get("id") if isinstance(parsed, dict) and "method" not in parsed else None
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            return self._skip()
        key = coerce_request_id(request_id)
        if key not in self._in_flight:
            return self._skip()
        del self._in_flight[key]
        detail = (problem or describe(parsed, exc))[:MAX_DETAIL]
        error = ErrorData(
            code=INTERNAL_ERROR,
            message=f"the server sent a malformed reply: {detail}",
            data={REASON_MARKER: "invalidOutput", "detail": detail},
        )
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=key, error=error))


def describe(parsed: dict[str, Any], exc: ValueError) -> str:
    """What is wrong with a reply that parsed as JSON but not as a JSON-RPC message, in plain words."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return "the reply is not a valid JSON-RPC message"
    found = exc.errors(include_url=False, include_input=False, include_context=False)
    invalid_json = next((error for error in found if error["type"] == "json_invalid"), None)
    if invalid_json is not None:
        if _has_lone_surrogate(parsed):
            return "the reply contains a lone surrogate escape (not valid Unicode)"
        return str(invalid_json["msg"])
    kind = "JSONRPCError" if "error" in parsed else "JSONRPCResponse"
    chosen = [error for error in found if error["loc"][:1] == (kind,)] or found
    if not chosen:
        return "the reply is not a valid JSON-RPC message"
    where = ".".join(str(part) for part in chosen[0]["loc"][1:]) or "message"
    shape = "error" if kind == "JSONRPCError" else "response"
    return f"not a valid JSON-RPC {shape}: {where}: {chosen[0]['msg']}"


def _has_lone_surrogate(parsed: Any) -> bool:
    try:
        json.dumps(parsed, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, RecursionError):
        return True
    return False


def result_detail(exc: Any) -> str:
    """What is wrong with a well-formed reply whose ``result`` is not the shape the method returns."""
    found = exc.errors(include_url=False, include_input=False, include_context=False)
    if not found:
        return "the result does not have the expected shape"
    where = ".".join(str(part) for part in found[0]["loc"]) or "result"
    return f"result {where}: {found[0]['msg']}"[:MAX_DETAIL]
