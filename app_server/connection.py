"""One client connection: its outgoing queue, opt-outs, in-flight requests and pending server requests."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pydantic import BaseModel

from app_server.transport import ByteTransport
from protocol.jsonrpc import AppError, RequestId

log = structlog.get_logger("app_server.connection")
_server_request_ids = itertools.count(1)


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _id_json(request_id: RequestId | None) -> str:
    return json.dumps(request_id, ensure_ascii=False)


@dataclass
class PendingServerRequest:
    """A daemon→client request waiting for exactly this connection's answer to exactly this id."""

    done: anyio.Event = field(default_factory=anyio.Event)
    response: dict[str, Any] | None = None


class ClientConnection:
    """Serializes everything written to one client, in order, through a single writer task."""

    def __init__(self, label: str, transport: ByteTransport) -> None:
        self.label = label
        self.transport = transport
        self.initialized = False
        self.opt_outs: frozenset[str] = frozenset()
        self.in_flight: dict[RequestId, anyio.CancelScope] = {}
        self.pending: dict[str, PendingServerRequest] = {}
        self.closed = anyio.Event()
        self._outgoing: tuple[MemoryObjectSendStream[bytes], MemoryObjectReceiveStream[bytes]] = (
            anyio.create_memory_object_stream[bytes](math.inf)
        )

    async def writer_loop(self) -> None:
        """Write queued messages, batching whatever is already waiting into one write."""
        receive = self._outgoing[1]
        try:
            async for data in receive:
                batch = [data]
                while True:
                    try:
                        batch.append(receive.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                await self.transport.send(b"".join(batch))
        except (anyio.BrokenResourceError, BrokenPipeError, ConnectionError, OSError):
            log.info("client_gone", connection=self.label)
        finally:
            self.closed.set()

    def send_raw(self, data: bytes) -> None:
        try:
            self._outgoing[0].send_nowait(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    def close_outgoing(self) -> None:
        self._outgoing[0].close()

    def respond(self, request_id: RequestId, result: BaseModel) -> None:
        self.send_raw(
            b'{"jsonrpc":"2.0","id":%s,"result":%s}\n' % (_id_json(request_id).encode(), result.model_dump_json().encode())
        )

    def respond_error(self, request_id: RequestId | None, error: AppError) -> None:
        self.send_raw(encode({"jsonrpc": "2.0", "id": request_id, "error": error.to_error()}))

    def notify_encoded(self, method: str, params_json: bytes) -> None:
        """Send a notification whose params are already JSON (shared across connections)."""
        if self.initialized and method not in self.opt_outs:
            self.send_raw(b'{"jsonrpc":"2.0","method":"%s","params":%s}\n' % (method.encode(), params_json))

    def notify(self, method: str, params: BaseModel) -> None:
        self.notify_encoded(method, params.model_dump_json().encode())

    async def request(self, method: str, params: BaseModel, request_id: str) -> dict[str, Any]:
        """Send a server request and wait for this connection's answer (the raw response message)."""
        pending = self.pending[request_id] = PendingServerRequest()
        try:
            self.send_raw(
                b'{"jsonrpc":"2.0","id":"%s","method":"%s","params":%s}\n'
                % (request_id.encode(), method.encode(), params.model_dump_json().encode())
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
        for pending in self.pending.values():
            pending.done.set()


def next_server_request_id() -> str:
    return f"srv-{next(_server_request_ids)}"
