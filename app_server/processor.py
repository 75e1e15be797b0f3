"""Reads a connection's lines, validates envelopes, dispatches by the catalog and writes responses."""

from __future__ import annotations

import json
from typing import Any

import anyio
import structlog
from pydantic import ValidationError

from app_server import __version__
from app_server.connection import ClientConnection
from app_server.daemon import Daemon, RequestContext
from app_server.handlers import HANDLERS
from app_server.lines import TOO_LARGE, read_lines
from mcp_runtime.config import validation_errors
from mcp_runtime.limits import MAX_MESSAGE_BYTES
from protocol.catalog import METHODS, NOTIFICATIONS, RETIRED
from protocol.jsonrpc import AppError, RequestId
from protocol.lifecycle import CancelRequestParams, InitializeParams, InitializeResult, ServerInfo

log = structlog.get_logger("app_server.processor")

MAX_IN_FLIGHT = 256
SHUTDOWN_GRACE_S = 2.0
PROTOCOL_VERSION = "2026-11-30"
_PUBLIC_METHODS = sorted(m for m in METHODS if m != "initialize")


def _is_request_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class Processor:
    """Serves one client connection until its input ends or the daemon stops it."""

    def __init__(self, daemon: Daemon, connection: ClientConnection) -> None:
        self.daemon = daemon
        self.connection = connection
        self.reading = anyio.CancelScope()

    async def serve(self) -> None:
        connection = self.connection
        self.daemon.bus.attach(connection)
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(connection.writer_loop)
                with self.reading:
                    async for line in read_lines(connection.transport.receive, MAX_MESSAGE_BYTES):
                        self._handle_line(line, tasks)
                await self._drain(tasks)
        finally:
            self.daemon.bus.detach(connection)
            connection.abandon_server_requests()

    async def _drain(self, tasks: anyio.abc.TaskGroup) -> None:
        """Input ended: let in-flight requests answer, cancel what is left after a grace period."""
        with anyio.move_on_after(SHUTDOWN_GRACE_S):
            while self.connection.in_flight:
                await anyio.sleep(0.01)
        for scope in list(self.connection.in_flight.values()):
            scope.cancel()
        while self.connection.in_flight:
            await anyio.sleep(0.001)
        self.connection.abandon_server_requests()
        self.connection.close_outgoing()

    def _handle_line(self, line: bytes | object, tasks: anyio.abc.TaskGroup) -> None:
        connection = self.connection
        if line is TOO_LARGE:
            connection.respond_error(None, AppError("messageTooLarge", f"a message exceeded {MAX_MESSAGE_BYTES} bytes"))
            return
        assert isinstance(line, bytes)
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            connection.respond_error(None, AppError("parseError", "the line is not valid JSON"))
            return
        if not isinstance(message, dict):
            connection.respond_error(None, AppError("invalidRequest", "a message must be a JSON object"))
            return
        method = message.get("method")
        has_id = "id" in message
        request_id = message.get("id")
        if method is None and has_id and ("result" in message or "error" in message):
            connection.resolve(message)
            return
        if not isinstance(method, str) or (has_id and not _is_request_id(request_id)):
            reply_id = request_id if _is_request_id(request_id) else None
            connection.respond_error(reply_id, AppError("invalidRequest", "not a JSON-RPC request or notification"))
            return
        params = message.get("params")
        if not has_id:
            self._handle_notification(method, params)
            return
        self._handle_request(request_id, method, params, tasks)

    def _handle_notification(self, method: str, params: Any) -> None:
        if method == "$/cancelRequest":
            try:
                target = CancelRequestParams.model_validate(params).id
            except ValidationError:
                return
            scope = self.connection.in_flight.get(target)
            if scope is not None:
                scope.cancel()

    def _handle_request(self, request_id: RequestId, method: str, params: Any, tasks: anyio.abc.TaskGroup) -> None:
        connection = self.connection
        if method == "initialize":
            self._initialize(request_id, params)
            return
        if not connection.initialized:
            connection.respond_error(request_id, AppError("notInitialized", "send initialize first"))
            return
        if method in RETIRED:
            details = {"replacement": RETIRED[method]} if RETIRED[method] else {}
            connection.respond_error(request_id, AppError("retired", f"{method} is retired", **details))
            return
        if method not in METHODS:
            connection.respond_error(request_id, AppError("methodNotFound", f"unknown method {method[:100]}"))
            return
        if request_id in connection.in_flight:
            connection.respond_error(request_id, AppError("invalidRequest", "this request id is already in flight"))
            return
        if len(connection.in_flight) >= MAX_IN_FLIGHT:
            connection.respond_error(request_id, AppError("overloaded", "too many requests in flight; retry later"))
            return
        scope = connection.in_flight[request_id] = anyio.CancelScope()
        tasks.start_soon(self._run, request_id, method, params, scope)

    def _initialize(self, request_id: RequestId, params: Any) -> None:
        connection = self.connection
        if connection.initialized:
            connection.respond_error(request_id, AppError("alreadyInitialized", "initialize was already received"))
            return
        try:
            parsed = InitializeParams.model_validate(params if params is not None else {})
        except ValidationError as exc:
            connection.respond_error(
                request_id, AppError("invalidParams", "invalid initialize params", errors=validation_errors(exc))
            )
            return
        capabilities = parsed.capabilities
        connection.opt_outs = frozenset(capabilities.opt_out_notification_methods or []) if capabilities else frozenset()
        connection.initialized = True
        result = InitializeResult(
            server_info=ServerInfo(name="mcp-app-server", version=__version__),
            protocol_version=PROTOCOL_VERSION,
            user_agent=f"mcp-app-server/{__version__} ({parsed.client_info.name}/{parsed.client_info.version})",
            data_dir=str(self.daemon.data_dir),
            methods=_PUBLIC_METHODS,
            notifications=sorted(NOTIFICATIONS),
        )
        connection.respond(request_id, result)
        self.daemon.client_initialized()

    async def _run(self, request_id: RequestId, method: str, params: Any, scope: anyio.CancelScope) -> None:
        connection = self.connection
        error: AppError | None = None
        try:
            with scope:
                result = await self._dispatch(request_id, method, params)
                connection.respond(request_id, result)
                return
            error = AppError("cancelled", "the request was cancelled")
        except AppError as exc:
            error = exc
        except Exception as exc:
            log.error("handler_failed", method=method, error_type=type(exc).__name__)
            error = AppError("internal", "internal error")
        finally:
            connection.in_flight.pop(request_id, None)
            if error is not None:
                connection.respond_error(request_id, error)

    async def _dispatch(self, request_id: RequestId, method: str, params: Any) -> Any:
        spec = METHODS[method]
        try:
            parsed = spec.params.model_validate(params if params is not None else {})
        except ValidationError as exc:
            raise AppError("invalidParams", f"invalid params for {method}", errors=validation_errors(exc)) from exc
        handler = HANDLERS.get(method)
        if handler is None:
            raise AppError("notImplemented", f"{method} is not implemented yet")
        return await handler(RequestContext(self.daemon, self.connection, request_id), parsed)
