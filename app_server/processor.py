"""Reads a connection's lines, validates envelopes, dispatches by the catalog and writes responses."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from app_server.context import Daemon, RequestContext
from app_server.process.logs import configure as configure_logging
from app_server.process.logs import configure_if_loaded, debug_enabled, get_logger
from app_server.wire import decode, handshake
from app_server.wire.connection import REQUEST_BACKLOG, ClientConnection, error_line
from app_server.wire.lines import TOO_LARGE, read_lines
from mcp_runtime import MAX_MESSAGE_BYTES, secret_store_info
from protocol.catalog import METHODS, RETIRED
from protocol.jsonrpc import AppError, RequestId, validation_errors

if TYPE_CHECKING:
    from app_server.handlers.registry import AwaitedHandler, InlineHandler

log = get_logger("app_server.processor")

MAX_IN_FLIGHT = 256
MAX_IN_FLIGHT_BYTES = 4 << 20
"""Request bytes in flight per connection past which new requests are ``overloaded`` (the request that crosses
it is still taken, so one message of any size always fits): params live several times over (upstream copies
included) until answered, and 256 large calls would otherwise cost hundreds of MiB."""
SHUTDOWN_GRACE_S = 1.0
"""Time in-flight requests get to answer once input ended; the rest are cancelled."""
FLUSH_S = 2.0
"""Time the client gets to take the last responses at shutdown, even when it no longer reads."""
READ_PAUSE_BACKLOG = 16 << 20
"""Unsent output past which input is read only to answer ``overloaded`` (the output a deaf client holds counts
against its bound whatever holds it: the spool, or memory on a full disk)."""
DEAF_REFUSALS_BYTES = 1 << 20
"""Past ``READ_PAUSE_BACKLOG``, the ``overloaded`` answers a deaf client may be given before its input is not read
at all until it reads (its writes then block): so they cost bounded memory too."""
OFF_LOOP_LINE = 256 << 10
"""Lines at least this long are decoded in a worker thread so other connections keep being served."""


def _validated_initialize(params: Any) -> handshake.Client:
    """Full validation through the catalog's model, for params the quick check did not accept."""
    from pydantic import ValidationError

    try:
        parsed = METHODS["initialize"].params.model_validate(params if params is not None else {})
    except ValidationError as exc:
        raise AppError("invalidParams", "invalid initialize params", errors=validation_errors(exc)) from exc
    capabilities = parsed.capabilities  # type: ignore[attr-defined]
    opt_outs = frozenset(capabilities.opt_out_notification_methods or []) if capabilities else frozenset()
    apps = capabilities is not None and capabilities.mcp_apps is not None
    return parsed.client_info.name, parsed.client_info.version, opt_outs, apps  # type: ignore[attr-defined]


@dataclass(slots=True)
class _Job:
    request_id: RequestId
    method: str
    params: Any
    handler: AwaitedHandler
    scope: anyio.CancelScope
    started: float


@dataclass(slots=True)
class _Parked:
    """An idle worker waiting for its next job."""

    woken: anyio.Event = field(default_factory=anyio.Event)
    job: _Job | None = None


class _Workers:
    """Long-lived tasks in the connection's task group that run its awaited requests: handing a request to a parked
    worker costs an event, where a task per request costs anyio a task handle, an event and a cancel scope.
    Workers are added while every one is busy, so there are never more than ``MAX_IN_FLIGHT``."""

    def __init__(self, tasks: anyio.abc.TaskGroup, run: Callable[[_Job], Awaitable[None]]) -> None:
        self._tasks = tasks
        self._run = run
        self._parked: list[_Parked] = []

    def submit(self, job: _Job) -> None:
        if self._parked:
            parked = self._parked.pop()
            parked.job = job
            parked.woken.set()
        else:
            self._tasks.start_soon(self._work, job)

    async def _work(self, job: _Job | None) -> None:
        while job is not None:
            await self._run(job)
            parked = _Parked()
            self._parked.append(parked)
            job = None  # a parked worker holds no finished request: its params can be megabytes
            await parked.woken.wait()
            job, parked.job = parked.job, None


class Processor:
    """Serves one client connection until its input ends or the daemon stops it."""

    def __init__(self, daemon: Daemon, connection: ClientConnection) -> None:
        self.daemon = daemon
        self.connection = connection
        connection.trace = daemon.trace
        self.reading = anyio.CancelScope()
        self.input_ended = anyio.Event()
        self.settled = anyio.Event()
        self.finished = anyio.Event()
        self._idle: anyio.Event | None = None
        self._in_flight_sizes: dict[RequestId, int] = {}
        self._in_flight_bytes = 0
        self._refused = 0
        """Bytes of ``overloaded`` answers given while the client was not reading."""

    async def serve(self) -> None:
        """Read until input ends or ``reading`` is cancelled, settle in-flight requests, flush (bounded)."""
        connection = self.connection
        self.daemon.bus.attach(connection)
        try:
            async with anyio.create_task_group() as output:
                output.start_soon(connection.transport.run)  # spooled output, until the last flush is over
                output.start_soon(connection.resend_latest)  # statuses dropped while the client did not read
                async with anyio.create_task_group() as tasks:
                    workers = _Workers(tasks, self._run)
                    with self.reading:
                        async for line in read_lines(connection.transport.receive, MAX_MESSAGE_BYTES):
                            if connection.backlog() > READ_PAUSE_BACKLOG and self._refused > DEAF_REFUSALS_BYTES:
                                await connection.transport.drain()
                                self._refused = 0
                            await self._handle_line(line, workers)
                    self.input_ended.set()
                    await self._settle()
                    tasks.cancel_scope.cancel()  # the parked workers; every request has answered or been cancelled
                self.settled.set()
                connection.abandon_server_requests()
                with anyio.move_on_after(FLUSH_S):
                    await connection.transport.flush()
                output.cancel_scope.cancel()
        finally:
            self.daemon.bus.detach(connection)
            connection.abandon_server_requests()
            configure_logging()  # structlog inspects stdout when imported: import it before stdout can close
            with anyio.CancelScope(shield=True):
                await connection.transport.aclose()
            self.input_ended.set()
            self.settled.set()
            self.finished.set()

    async def _settle(self) -> None:
        """Input ended: let in-flight requests answer, cancel what is left after a grace period.

        No answer can arrive any more, so pending server requests (elicitations) resolve at once (as cancel)."""
        self.connection.abandon_server_requests()
        if self.connection.in_flight:
            self._idle = anyio.Event()
            with anyio.move_on_after(SHUTDOWN_GRACE_S):
                await self._idle.wait()
        for scope in list(self.connection.in_flight.values()):
            scope.cancel()

    async def _handle_line(self, line: bytes | object, workers: _Workers) -> None:
        """Answer or dispatch one line; whatever the line holds, the connection keeps serving."""
        connection = self.connection
        trace = self.daemon.trace
        if line is TOO_LARGE:
            too_large = AppError("messageTooLarge", f"a message exceeded {MAX_MESSAGE_BYTES} bytes")
            if trace is not None:
                trace.refused(connection.label, None, too_large.reason)
            connection.respond_error(None, too_large)
            return
        assert isinstance(line, bytes)
        if not line.strip():
            return
        try:
            if len(line) >= OFF_LOOP_LINE:
                message = await anyio.to_thread.run_sync(decode.decode, line)
            else:
                message = decode.decode(line)
            if message is None:
                return
            if "method" in message and "id" in message:
                self._handle_request(message, workers, len(line))  # traced once its params are judged
                return
            if trace is not None:
                trace.incoming(connection.label, message, len(line))
            if message.get("method") is None:
                connection.resolve(message)
            else:
                self._handle_notification(message["method"], message.get("params"))
        except decode.Rejected as rejected:
            if trace is not None:
                trace.refused(connection.label, len(line), rejected.error.reason)
            connection.respond_error(rejected.request_id, rejected.error)
        except Exception:
            log.error("line_failed", connection=connection.label, exc_info=True)
            connection.respond_error(None, AppError("internal", "internal error"))

    def _handle_notification(self, method: str, params: Any) -> None:
        if method == "initialized" and self.connection.initialized:
            self.daemon.client_initialized()
        elif method == "$/cancelRequest":
            target = params.get("id") if isinstance(params, dict) else None
            scope = self.connection.in_flight.get(target) if decode.is_request_id(target) else None
            if scope is not None:
                scope.cancel()

    def _handle_request(self, message: dict[str, Any], workers: _Workers, size: int) -> None:
        connection = self.connection
        started = time.perf_counter()
        request_id, method, params = message["id"], message["method"], message.get("params")
        if method == "initialize":
            self._initialize(request_id, params, started, message, size)
            return
        refused = self._refusal(method)
        if refused is not None:
            self._traced(message, size)
            self._refuse(request_id, method, refused, started)
            return
        from app_server.handlers import InlineRoute
        from app_server.handlers import route as route_of

        route = route_of(method)
        configure_if_loaded()
        try:
            params = _parse(method, params)
        except AppError as invalid:
            self._traced(message, size, parsed=False)
            self._refuse(request_id, method, invalid, started)
            return
        self._traced(message, size)
        if isinstance(route, InlineRoute):
            self._run_inline(request_id, method, params, route.handler, started)
            return
        if request_id in connection.in_flight:
            in_flight = AppError("invalidRequest", "this request id is already in flight")
            self._refuse(request_id, method, in_flight, started)
            return
        if len(connection.in_flight) >= MAX_IN_FLIGHT or self._in_flight_bytes >= MAX_IN_FLIGHT_BYTES:
            overloaded = AppError("overloaded", "too many requests in flight; retry later")
            self._refuse(request_id, method, overloaded, started)
            return
        scope = connection.in_flight[request_id] = anyio.CancelScope()
        self._in_flight_sizes[request_id] = size
        self._in_flight_bytes += size
        workers.submit(_Job(request_id, method, params, route.handler, scope, started))

    def _refusal(self, method: str) -> AppError | None:
        """Why a request is refused before its params are read, if it is."""
        if not self.connection.initialized:
            return AppError("notInitialized", "send initialize first")
        if self.connection.backlog() > REQUEST_BACKLOG:
            return AppError("overloaded", "the client is not reading; retry later")
        if method in RETIRED:
            details = {"replacement": RETIRED[method]} if RETIRED[method] else {}
            return AppError("retired", f"{method} is retired", **details)
        if method not in METHODS:
            return AppError("methodNotFound", f"unknown method {method[:100]}")
        return None

    def _traced(self, message: dict[str, Any], size: int, *, parsed: bool = True) -> None:
        """Record a request in the trace: whole (redacted) once its params are valid, by its method, id and size
        alone when they are not (what a client sent by mistake may be anything, a secret in the wrong field)."""
        trace = self.daemon.trace
        if trace is not None:
            trace.incoming(self.connection.label, message, size, parsed=parsed)

    def _refuse(self, request_id: RequestId, method: str, error: AppError, started: float) -> None:
        line = error_line(request_id, error)
        self.connection.send_raw(line)
        if error.reason == "overloaded":
            self._refused += len(line)
        self._answered(request_id, method, started, len(line), error.reason)

    def _answered(self, request_id: RequestId, method: str, started: float, size: int, outcome: str) -> None:
        """The ``debug`` line of one request: what was asked, how long it took, how large and how it ended (never
        its arguments or its result)."""
        if debug_enabled():
            log.debug(
                "request",
                connection=self.connection.label,
                id=request_id[:100] if isinstance(request_id, str) else request_id,
                method=method[:100],
                ms=round((time.perf_counter() - started) * 1000, 3),
                bytes=size,
                outcome=outcome,
            )

    def _run_inline(
        self, request_id: RequestId, method: str, params: Any, handler: InlineHandler, started: float
    ) -> None:
        """Handlers that never wait (store and cached-state reads) answer without a task switch."""
        outcome = "ok"
        try:
            result = handler(RequestContext(self.daemon, self.connection, request_id), params)
        except AppError as exc:
            outcome, line = exc.reason, error_line(request_id, exc)
        except Exception:
            log.error("handler_failed", method=method, exc_info=True)
            outcome, line = "internal", error_line(request_id, AppError("internal", "internal error"))
        else:
            line = self.connection.result_line(request_id, result)
        self.connection.send_raw(line)
        self.daemon.first_answer.set()
        self._answered(request_id, method, started, len(line), outcome)

    def _initialize(
        self, request_id: RequestId, params: Any, started: float, message: dict[str, Any], size: int
    ) -> None:
        connection = self.connection
        if connection.initialized:
            self._traced(message, size)
            refused = AppError("alreadyInitialized", "initialize was already received")
            self._refuse(request_id, "initialize", refused, started)
            return
        quick = handshake.quick_params(params if params is not None else {})
        if quick is None:
            try:
                quick = _validated_initialize(params)
            except AppError as exc:
                self._traced(message, size, parsed=False)
                self._refuse(request_id, "initialize", exc, started)
                return
        self._traced(message, size)
        name, version, connection.opt_outs, renders_views = quick
        if renders_views:
            self.daemon.host_renders_views()
        connection.initialized = True
        line = handshake.initialize_line(request_id, (name, version), str(self.daemon.data_dir), secret_store_info())
        connection.send_raw(line)
        self._answered(request_id, "initialize", started, len(line), "ok")

    def adopt(self, early: handshake.ServedEarly) -> None:
        """Take over the stdio connection whose first lines start-up's reader served before the event loop ran:
        its ``initialize`` (the client, the opt-outs, the answer's ``debug`` line) and an ``initialized`` after it.
        The bytes it read and did not serve are the transport's to deliver first (``Transport.stdio``)."""
        if early.client is not None:
            self.connection.initialized = True
            self.connection.opt_outs = early.client[2]
            if early.client[3]:
                self.daemon.host_renders_views()
        if early.answered is not None:
            request_id, seconds, size = early.answered
            self._answered(request_id, "initialize", time.perf_counter() - seconds, size, "ok")
        if early.initialized:
            self._handle_notification("initialized", None)

    async def _run(self, job: _Job) -> None:
        """The request stays in flight until its answer has been taken by the transport (backpressure)."""
        connection = self.connection
        request_id, method, params, handler = job.request_id, job.method, job.params, job.handler
        answered = False
        try:
            with job.scope:
                line, outcome = await self._answer(request_id, method, params, handler)
                size = len(line)
                # The only request in flight has no other answer to share a write with: it leaves at once.
                connection.send_raw(line, now=len(connection.in_flight) == 1)
                del line  # no name keeps it alive while the client does not read
                answered = True
                self._answered(request_id, method, job.started, size, outcome)
                self.daemon.first_answer.set()
                await connection.transport.drain()
        finally:
            if not answered:
                cancelled = AppError("cancelled", "the request was cancelled")
                self._refuse(request_id, method, cancelled, job.started)
            connection.in_flight.pop(request_id, None)
            self._in_flight_bytes -= self._in_flight_sizes.pop(request_id, 0)
            if not connection.in_flight and self._idle is not None:
                self._idle.set()

    async def _answer(self, request_id: RequestId, method: str, params: Any, handler: Any) -> tuple[bytes, str]:
        """The encoded response line (bytes, not a result model) and the outcome: ``ok`` or the error's reason."""
        try:
            result = await handler(RequestContext(self.daemon, self.connection, request_id), params)
        except AppError as exc:
            return error_line(request_id, exc), exc.reason
        except Exception:
            log.error("handler_failed", method=method, exc_info=True)
            return error_line(request_id, AppError("internal", "internal error")), "internal"
        return self.connection.result_line(request_id, result), "ok"


def _parse(method: str, params: Any) -> Any:
    """Params validated by the catalog's model (``invalidParams`` with paths on failure)."""
    from pydantic import ValidationError

    try:
        return METHODS[method].params.model_validate(params if params is not None else {})
    except ValidationError as exc:
        raise AppError("invalidParams", f"invalid params for {method}", errors=validation_errors(exc)) from exc
