"""One client connection: what it is sent (responses, notifications, server requests, in the order they are made),
its opt-outs, its requests in flight and the server requests waiting for its answer."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from app_server.process.logs import get_logger
from app_server.wire.latest import LatestHeld, key_of
from app_server.wire.transport import Transport
from protocol.constants import MAX_OUTPUT_LINE_BYTES
from protocol.encoding import compact, line, model_json
from protocol.jsonrpc import AppError, RequestId

if TYPE_CHECKING:
    from pydantic import BaseModel

    from app_server.wire.trace import Trace

log = get_logger("app_server.connection")
_server_request_ids = itertools.count(1)


NOTIFICATION_BACKLOG = 8 << 20
"""Unsent output past which notifications to a connection are dropped (responses never are)."""
LOW_PRIORITY_BACKLOG = NOTIFICATION_BACKLOG // 2
"""Progress and ``mcp:*`` updates are dropped earlier, so other notifications outlive them."""
REQUEST_BACKLOG = 8 << 20
"""Unsent output past which new requests are refused with ``overloaded``."""


@dataclass(frozen=True, slots=True)
class EncodedResult:
    """A result its handler already holds as compact JSON (a tool result dumped once, cached status rows):
    spliced into the response as is."""

    body: bytes


def _result_line(request_id: RequestId, body: bytes) -> bytes:
    """Joined, not ``%``-formatted: ``bytes % (big,)`` over-allocates and shrinks a fresh buffer, which for a large
    body costs page faults that ``join`` (sized once) does not."""
    return b"".join((b'{"jsonrpc":"2.0","id":', compact(request_id), b',"result":', body, b"}\n"))


def error_line(request_id: RequestId | None, error: AppError) -> bytes:
    return line({"jsonrpc": "2.0", "id": request_id, "error": error.to_error()})


def _is_low_priority(method: str) -> bool:
    return method == "mcpServer/tool/progress" or method.startswith("mcp:")


@dataclass
class PendingServerRequest:
    """A daemon→client request waiting for exactly this connection's answer to exactly this id."""

    done: anyio.Event = field(default_factory=anyio.Event)
    response: dict[str, Any] | None = None


class ClientConnection:
    """Writes responses and notifications straight into the transport, in the order they are produced."""

    def __init__(self, label: str, transport: Transport) -> None:
        self.label = label
        self.transport = transport
        self.initialized = False
        self.opt_outs: frozenset[str] = frozenset()
        self.in_flight: dict[RequestId, anyio.CancelScope] = {}
        self.pending: dict[str, PendingServerRequest] = {}
        self.closed = False
        self.dropped_notifications = 0
        self.latest = LatestHeld()
        """The last dropped status of each (thread, server), owed to the client once it reads."""
        self.trace: Trace | None = None

    def send_raw(self, data: bytes, now: bool = False) -> None:
        """``now``: write at once instead of with the other writes of this loop pass (see ``Transport.write``)."""
        if self.trace is not None:
            self.trace.outgoing(self.label, data)
        try:
            self.transport.write(data, now)
        except OSError:
            log.info("client_gone", connection=self.label)

    def backlog(self) -> int:
        """Bytes written to this connection that the client has not read yet."""
        return self.transport.buffered()

    def respond(self, request_id: RequestId, result: BaseModel | EncodedResult) -> None:
        self.send_raw(self.result_line(request_id, result))

    def respond_error(self, request_id: RequestId | None, error: AppError) -> None:
        self.send_raw(error_line(request_id, error))

    def result_line(self, request_id: RequestId, result: BaseModel | EncodedResult) -> bytes:
        """The response line; a result that cannot be encoded as UTF-8 is escaped, one that cannot be encoded at
        all is answered ``internal``, one past ``MAX_OUTPUT_LINE_BYTES`` ``responseTooLarge``: a reply always
        exists, and no line is longer than a client may read."""
        if isinstance(result, EncodedResult):
            body = result.body
        else:
            try:
                body = model_json(result)
            except Exception:
                log.error("result_not_encodable", connection=self.label, exc_info=True)
                return error_line(request_id, AppError("internal", "the result could not be encoded"))
        response = _result_line(request_id, body)
        if len(response) - 1 > MAX_OUTPUT_LINE_BYTES:
            log.warning("response_too_large", connection=self.label, size=len(response) - 1)
            message = f"the answer is {len(response) - 1} bytes (max {MAX_OUTPUT_LINE_BYTES})"
            return error_line(request_id, AppError("responseTooLarge", message, limit=MAX_OUTPUT_LINE_BYTES))
        return response

    def notify_encoded(self, method: str, params_json: bytes) -> None:
        """Send a notification whose params are already JSON (shared across connections)."""
        if not self.initialized or method in self.opt_outs:
            return
        limit = LOW_PRIORITY_BACKLOG if _is_low_priority(method) else NOTIFICATION_BACKLOG
        if len(params_json) > MAX_OUTPUT_LINE_BYTES - len(method) - 64:
            log.warning("notification_too_large", connection=self.label, method=method, size=len(params_json))
            return
        data = b'{"jsonrpc":"2.0","method":"%s","params":%s}\n' % (method.encode(), params_json)
        key = key_of(method, params_json)
        if self.backlog() + len(params_json) > limit:
            if not self.dropped_notifications:
                log.warning("notifications_dropped", connection=self.label, method=method, backlog=self.backlog())
            self.dropped_notifications += 1
            if key is not None:
                self.latest.hold(key, data)  # sent once the client reads again
            return
        if key is not None:
            self.latest.sent(key)
        self.send_raw(data)

    async def resend_latest(self) -> None:
        """For the connection's life: the held statuses go out once the client has read what was waiting."""
        await self.latest.resend(self.transport.drain, self.send_raw)

    def notify(self, method: str, params: BaseModel) -> None:
        self.notify_encoded(method, model_json(params))

    async def request(self, method: str, params: BaseModel, request_id: str) -> dict[str, Any]:
        """Send a server request and wait for this connection's answer (the raw response message)."""
        if self.closed:
            raise AppError("cancelled", "the client connection is closed")
        pending = self.pending[request_id] = PendingServerRequest()
        try:
            self.send_raw(
                b'{"jsonrpc":"2.0","id":"%s","method":"%s","params":%s}\n'
                % (request_id.encode(), method.encode(), model_json(params))
            )
            await pending.done.wait()
            if pending.response is None:
                raise AppError("cancelled", "the client connection closed before answering")
            return pending.response
        finally:
            self.pending.pop(request_id, None)

    def resolve(self, message: dict[str, Any]) -> bool:
        """Route a client response to the server request it answers; unknown ids are ignored."""
        request_id = message.get("id")
        pending = self.pending.get(request_id) if isinstance(request_id, str) else None
        if pending is None or pending.done.is_set():
            return False
        pending.response = message
        pending.done.set()
        return True

    def abandon_server_requests(self) -> None:
        """The connection is closing: every pending server request resolves without an answer."""
        self.closed = True
        for pending in self.pending.values():
            pending.done.set()


def next_server_request_id() -> str:
    return f"srv-{next(_server_request_ids)}"
