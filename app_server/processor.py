"""Reads a connection's lines, validates envelopes, dispatches by the catalog and writes responses."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio

from app_server import __version__, handshake
from app_server.connection import ClientConnection, encode
from app_server.daemon import Daemon, RequestContext
from app_server.lines import TOO_LARGE, read_lines
from app_server.logs import configure as configure_logging
from app_server.logs import get_logger
from mcp_runtime import MAX_MESSAGE_BYTES
from protocol.catalog import METHODS, NOTIFICATIONS, RETIRED
from protocol.jsonrpc import AppError, RequestId, validation_errors

if TYPE_CHECKING:
    from app_server.handlers.registry import AwaitedHandler, InlineHandler

log = get_logger("app_server.processor")

MAX_IN_FLIGHT = 256
SHUTDOWN_GRACE_S = 2.0
PROTOCOL_VERSION = "2026-11-30"
_PUBLIC_METHODS = sorted(m for m in METHODS if m != "initialize")
_NOTIFICATIONS = sorted(NOTIFICATIONS)


def _validated_initialize(params: Any) -> tuple[str, str, frozenset[str]]:
    """Full validation through the catalog's model, for params the quick check did not accept."""
    from pydantic import ValidationError

    try:
        parsed = METHODS["initialize"].params.model_validate(params if params is not None else {})
    except ValidationError as exc:
        raise AppError("invalidParams", "invalid initialize params", errors=validation_errors(exc)) from exc
    capabilities = parsed.capabilities  # type: ignore[attr-defined]
    opt_outs = frozenset(capabilities.opt_out_notification_methods or []) if capabilities else frozenset()
    return parsed.client_info.name, parsed.client_info.version, opt_outs  # type: ignore[attr-defined]


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
                with self.reading:
                    async for line in read_lines(connection.transport.receive, MAX_MESSAGE_BYTES):
                        self._handle_line(line, tasks)
                await self._drain(tasks)
        finally:
            self.daemon.bus.detach(connection)
            connection.abandon_server_requests()

    async def _drain(self, tasks: anyio.abc.TaskGroup) -> None:
        """Input ended: let in-flight requests answer, cancel what is left after a grace period.

        No answer can arrive any more, so pending server requests (elicitations) resolve at once (as cancel)."""
        self.connection.abandon_server_requests()
        with anyio.move_on_after(SHUTDOWN_GRACE_S):
            while self.connection.in_flight:
                await anyio.sleep(0.01)
        for scope in list(self.connection.in_flight.values()):
            scope.cancel()
        while self.connection.in_flight:
            await anyio.sleep(0.001)
        self.connection.abandon_server_requests()
        await self.connection.transport.drain()

    def _handle_line(self, line: bytes | object, tasks: anyio.abc.TaskGroup) -> None:
        connection = self.connection
        if line is TOO_LARGE:
            too_large = AppError("messageTooLarge", f"a message exceeded {MAX_MESSAGE_BYTES} bytes")
            connection.respond_error(None, too_large)
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
            target = params.get("id") if isinstance(params, dict) else None
            scope = self.connection.in_flight.get(target) if _is_request_id(target) else None
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
        configure_logging()
        from app_server.handlers import ROUTES, InlineRoute

        route = ROUTES[method]
        if isinstance(route, InlineRoute):
            self._run_inline(request_id, method, params, route.handler)
            return
        if request_id in connection.in_flight:
            connection.respond_error(request_id, AppError("invalidRequest", "this request id is already in flight"))
            return
        if len(connection.in_flight) >= MAX_IN_FLIGHT:
            connection.respond_error(request_id, AppError("overloaded", "too many requests in flight; retry later"))
            return
        scope = connection.in_flight[request_id] = anyio.CancelScope()
        tasks.start_soon(self._run, request_id, method, params, route.handler, scope)

    def _run_inline(self, request_id: RequestId, method: str, params: Any, handler: InlineHandler) -> None:
        """Handlers that never wait (store and cached-state reads) answer without a task switch."""
        try:
            result = handler(RequestContext(self.daemon, self.connection, request_id), _parse(method, params))
        except AppError as exc:
            self.connection.respond_error(request_id, exc)
        except Exception as exc:
            log.error("handler_failed", method=method, error_type=type(exc).__name__)
            self.connection.respond_error(request_id, AppError("internal", "internal error"))
        else:
            self.connection.respond(request_id, result)

    def _initialize(self, request_id: RequestId, params: Any) -> None:
        connection = self.connection
        if connection.initialized:
            connection.respond_error(request_id, AppError("alreadyInitialized", "initialize was already received"))
            return
        quick = handshake.quick_params(params if params is not None else {})
        if quick is None:
            try:
                quick = _validated_initialize(params)
            except AppError as exc:
                connection.respond_error(request_id, exc)
                return
        name, version, connection.opt_outs = quick
        connection.initialized = True
        answer = handshake.result(
            version=__version__,
            protocol_version=PROTOCOL_VERSION,
            client=(name, version),
            data_dir=str(self.daemon.data_dir),
            methods=_PUBLIC_METHODS,
            notifications=_NOTIFICATIONS,
        )
        connection.send_raw(encode({"jsonrpc": "2.0", "id": request_id, "result": answer}))
        self.daemon.client_initialized()

    async def _run(
        self, request_id: RequestId, method: str, params: Any, handler: AwaitedHandler, scope: anyio.CancelScope
    ) -> None:
        connection = self.connection
        error: AppError | None = None
        try:
            with scope:
                context = RequestContext(self.daemon, connection, request_id)
                result = await handler(context, _parse(method, params))
                connection.respond(request_id, result)
                await connection.transport.drain()
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


def _parse(method: str, params: Any) -> Any:
    """Params validated by the catalog's model (``invalidParams`` with paths on failure)."""
    from pydantic import ValidationError

    try:
        return METHODS[method].params.model_validate(params if params is not None else {})
    except ValidationError as exc:
        raise AppError("invalidParams", f"invalid params for {method}", errors=validation_errors(exc)) from exc
