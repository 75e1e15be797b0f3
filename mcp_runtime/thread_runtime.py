"""``McpThreadRuntime``: the per-thread owner of MCP connections and the only place tools execute (SPEC §3, §4).

It opens its own connections (never shared with the management manager or another thread), connects them in
the background when the thread is started or first referenced, and publishes ``mcpServer/startupStatus/updated``
with its ``threadId``. A tool call waits for its server to be ready (bounded by that server's startup timeout),
checks the tool filters, validates the arguments against the tool's ``inputSchema`` captured when the call
begins (a ``tools/list_changed`` during the call never swaps it: the connection defers its refresh while calls
are in flight), validates ``structuredContent`` against the ``outputSchema`` and enforces the call's deadline.

Server-originated elicitation is routed to exactly one waiting call: in the 2026 era the SDK drives the
input-required rounds inside the calling task, so a context variable names the call; in the 2025 era the
request arrives on the session's receive loop and is attributed only when exactly one call is in flight on that
server in this thread. Anything that cannot be attributed, and every URL-mode request, is declined. The runtime
knows nothing of client connections: each call brings its own ``ask`` and ``progress`` callbacks.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import structlog

from mcp_runtime.catalog import CatalogCache, build_views, full_name, visible_for_context
from mcp_runtime.connection import McpConnection, ProgressCallback, load_sdk, server_status
from mcp_runtime.events import EventSink
from mcp_runtime.limits import MAX_MESSAGE_BYTES
from mcp_runtime.management import auth_status, connection_auth
from protocol.config import McpServerConfig
from protocol.elicitation import ElicitationRequest
from protocol.jsonrpc import AppError
from protocol.resource import ResourceContent, ResourceReadResult
from protocol.server import ErrorInfo, McpTool, ServerStatus, StartupState, StartupStatusUpdated
from protocol.thread import ContentRef, ResourceReadFact

log = structlog.get_logger("mcp_runtime.thread_runtime")

AskCallback = Callable[[ElicitationRequest], Awaitable[dict[str, Any] | None]]
"""Sends the elicitation to the calling client and returns its raw answer (None: no usable answer)."""

_current_call: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("mcp_thread_call", default=None)


@dataclass(eq=False)
class _Call:
    """One tool call in flight: who to ask when the server elicits, and the elicitations it is waiting on."""

    runtime: McpThreadRuntime
    server: str
    turn_id: str | None
    ask: AskCallback | None
    elicitations: set[anyio.CancelScope] = field(default_factory=set)


@dataclass(frozen=True)
class _ToolSpec:
    tool: McpTool
    allowed: bool
    input: Any
    output: Any


@dataclass(eq=False)
class _Server:
    config: McpServerConfig
    connection: McpConnection | None = None
    ready: anyio.Event = field(default_factory=anyio.Event)
    task: asyncio.Task[None] | None = None
    error: AppError | None = None
    calls: list[_Call] = field(default_factory=list)


URI_PREVIEW_CHARS = 120
_NO_RECONNECT = frozenset({"authRequired", "reauthenticationRequired", "insufficientScope"})
"""Losses a reconnect cannot fix without the user (a login): reported, not retried."""


def resource_read_fact(server: str, uri: str, contents: Sequence[dict[str, Any]]) -> ResourceReadFact:
    """What a thread-scoped read leaves behind: digests, sizes and MIME types, never the text or blob."""
    refs: list[ContentRef] = []
    mime_types: list[str] = []
    for index, content in enumerate(contents):
        if "blob" in content:
            raw = base64.b64decode(content.get("blob") or "")
        else:
            raw = str(content.get("text") or "").encode()
        refs.append(ContentRef(index=index, bytes=len(raw), sha256=hashlib.sha256(raw).hexdigest()))
        mime = content.get("mimeType")
        if isinstance(mime, str) and mime not in mime_types:
            mime_types.append(mime)
    return ResourceReadFact(
        server=server,
        uri_digest=hashlib.sha256(uri.encode()).hexdigest(),
        uri_preview=uri[:URI_PREVIEW_CHARS],
        mime_types=mime_types,
        content_refs=refs,
        at=datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    )


def _errors(validator: Any, instance: Any) -> list[dict[str, str]]:
    return [
        {"path": "/".join(str(p) for p in err.absolute_path), "message": err.message[:500]}
        for err in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))[:20]
    ]


def _validator(schema: dict[str, Any]) -> Any:
    from jsonschema.validators import validator_for

    return validator_for(schema)(schema)


class McpThreadRuntime:
    """The connections of one canonical thread (satisfies the read handlers' ``Owner`` protocol)."""

    def __init__(
        self,
        thread_id: str,
        servers: Mapping[str, McpServerConfig],
        *,
        sink: EventSink,
        env: Mapping[str, str],
        data_dir: Path,
        allowed_tools: Sequence[str] | None = None,
        disabled_tools: Sequence[str] | None = None,
        record_fact: Callable[[ResourceReadFact], None] | None = None,
        preview: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.thread_id = thread_id
        self._servers = {name: _Server(config) for name, config in servers.items()}
        self._sink = sink
        self._env = env
        self._data_dir = data_dir
        self._allowed = list(allowed_tools) if allowed_tools is not None else None
        self._disabled = list(disabled_tools) if disabled_tools else None
        self._record_fact = record_fact
        self._preview = preview
        self._specs: dict[tuple[str, str], _ToolSpec] = {}
        self._closed = False
        self.catalog = CatalogCache()

    # ------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Connect every server in the background; returns at once."""
        for name, server in self._servers.items():
            if server.task is None:
                self._spawn(name, server)

    def _spawn(self, name: str, server: _Server) -> None:
        server.ready = anyio.Event()
        server.error = None
        server.task = asyncio.get_running_loop().create_task(self._connect(name, server), name=f"thread-mcp:{name}")

    async def _connect(self, name: str, server: _Server) -> None:
        _current_call.set(None)  # this task's context is a copy: a session started here must not see a call
        await load_sdk()
        self._publish(name, "starting")
        try:
            auth = connection_auth(name, server.config, self._data_dir)
        except AppError as exc:
            server.error = exc
            self._publish(name, "failed", exc)
            server.ready.set()
            return
        connection = McpConnection(
            name,
            server.config,
            env=self._env,
            sink=self._sink,
            thread_id=self.thread_id,
            elicitation=self._elicitation_handler(name),
            subscriptions=server.connection.subscriptions if server.connection is not None else (),
            auth=auth,
        )
        server.connection = connection
        try:
            await connection.start()
        except AppError as exc:
            server.error = exc
            self._publish(name, "cancelled" if exc.reason == "cancelled" else "failed", exc)
        except asyncio.CancelledError:
            server.error = AppError("cancelled", f"start of {name} was interrupted")
            self._publish(name, "cancelled")
            raise
        else:
            self._publish(name, "ready")
        finally:
            server.ready.set()

    def _publish(self, name: str, status: StartupState, error: AppError | None = None) -> None:
        self._sink(
            "mcpServer/startupStatus/updated",
            StartupStatusUpdated(
                thread_id=self.thread_id,
                name=name,
                status=status,
                error=ErrorInfo(reason=error.reason, message=error.message) if error is not None else None,
                failure_reason="reauthenticationRequired"
                if error is not None and error.reason in ("authRequired", "reauthenticationRequired")
                else None,
            ),
        )

    async def credentials_changed(self, name: str) -> None:
        """New OAuth tokens for ``name``: its connection is rebuilt (in the background) to use them."""
        server = self._servers.get(name)
        if server is None or self._closed:
            return
        if server.task is not None and not server.task.done():
            server.task.cancel()
            with anyio.CancelScope(shield=True):
                await asyncio.wait({server.task})
        if server.connection is not None:
            await server.connection.close()
        self._spawn(name, server)

    async def aclose(self) -> None:
        """Close every connection (interrupting starts) and reap every child."""
        self._closed = True
        async with anyio.create_task_group() as tg:
            for server in self._servers.values():
                if server.connection is not None:
                    tg.start_soon(server.connection.close)
        for server in self._servers.values():
            task = server.task
            if task is not None and not task.done():
                task.cancel()
                with anyio.CancelScope(shield=True):
                    await asyncio.wait({task})

    # ----------------------------------------------------------------- reads

    def _server(self, name: str) -> _Server:
        server = self._servers.get(name)
        if server is None:
            raise AppError("unknownServer", f"thread {self.thread_id} has no server named {name}", server=name)
        return server

    def tool_filters(self) -> tuple[list[str] | None, list[str] | None]:
        """The thread's ``allowedTools`` / ``disabledTools`` globs on full tool names."""
        return self._allowed, self._disabled

    def _status(self, name: str, server: _Server) -> ServerStatus:
        config = server.config
        connection = server.connection
        if connection is None:
            return ServerStatus(
                name=name, runtime_status="notStarted", auth_status=auth_status(name, config, self._data_dir)
            )
        return server_status(name, connection.state, auth_status(name, config, self._data_dir))

    def status(self, name: str) -> ServerStatus:
        return self._status(name, self._server(name))

    def statuses(self) -> list[ServerStatus]:
        return [self._status(name, server) for name, server in sorted(self._servers.items())]

    def connection(self, name: str) -> McpConnection:
        """The live connection (reads do not wait: a server still starting is ``notRunning``)."""
        server = self._server(name)
        if server.connection is None or not server.connection.connected:
            raise AppError("notRunning", f"server {name} is not connected in this thread", server=name)
        return server.connection

    def connections(self) -> dict[str, McpConnection]:
        return {
            name: server.connection
            for name, server in self._servers.items()
            if server.connection is not None and server.connection.connected
        }

    async def ready_connection(self, name: str) -> McpConnection:
        """Wait for the server's start (itself bounded by its startup timeout); reconnect a lost connection."""
        if self._closed:
            raise AppError("threadArchived", f"thread {self.thread_id} is archived")
        server = self._server(name)
        if server.task is None:
            self._spawn(name, server)
        await server.ready.wait()
        connection = server.connection
        if connection is not None and connection.connected:
            return connection
        if server.error is None and connection is not None:
            # It was connected and was lost since: finish that teardown, then one reconnect on demand
            # (bounded by the stop grace and the startup timeout). A loss needing a login is not retried.
            await connection.close()
            last = connection.state.last_error
            if last is None or last.reason not in _NO_RECONNECT:
                if server.task is None or server.task.done():
                    self._spawn(name, server)
                await server.ready.wait()
                if server.connection is not None and server.connection.connected:
                    return server.connection
        error = server.error
        if error is None and server.connection is not None and server.connection.state.last_error is not None:
            last = server.connection.state.last_error
            error = AppError(last.reason, last.message, server=name)
        raise error or AppError("notRunning", f"server {name} is not connected", server=name)

    async def read_resource(self, server: str, uri: str, preview: bool = False) -> ResourceReadResult:
        """Read through this thread's connection and append the diagnostics fact (digests, never the body)."""
        result = await self.connection(server).read_resource(uri)
        contents: list[dict[str, Any]] = result.get("contents", [])
        if self._record_fact is not None:
            self._record_fact(resource_read_fact(server, uri, contents))
        if preview and self._preview is not None:
            contents = [self._preview(c) for c in contents]
        return ResourceReadResult(contents=[ResourceContent.model_validate(c) for c in contents])

    # ----------------------------------------------------------------- calls

    def _tool(self, name: str, connection: McpConnection, tool: str) -> _ToolSpec:
        """The tool as listed now (captured for the whole call), after server and thread filters.

        Decisions and compiled validators are cached per listed tool object: a refresh replaces the objects.
        """
        listed = next((t for t in connection.tools if t.name == tool), None)
        if listed is None:
            raise AppError("unknownTool", f"server {name} has no tool {tool}", server=name, tool=tool)
        key = (name, tool)
        spec = self._specs.get(key)
        if spec is None or spec.tool is not listed:
            views = build_views(name, self._servers[name].config, [listed])
            visible = visible_for_context(
                views, caller=None, include_deferred=True, allowed_tools=self._allowed, disabled_tools=self._disabled
            )
            spec = self._specs[key] = _ToolSpec(
                tool=listed,
                allowed=bool(visible),
                input=_validator(listed.input_schema),
                output=_validator(listed.output_schema) if listed.output_schema is not None else None,
            )
        if not spec.allowed:
            raise AppError(
                "toolNotAllowed", f"{full_name(name, tool)} is not allowed in this thread", server=name, tool=tool
            )
        return spec

    async def call_tool(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any] | None,
        *,
        turn_id: str | None = None,
        timeout_ms: int | None = None,
        meta: dict[str, Any] | None = None,
        progress: ProgressCallback | None = None,
        ask: AskCallback | None = None,
    ) -> dict[str, Any]:
        """Execute one tool call; the result dict is the MCP ``CallToolResult`` (``isError`` kept)."""
        entry = self._server(server)
        connection = await self.ready_connection(server)
        spec = self._tool(server, connection, tool)
        errors = _errors(spec.input, arguments if arguments is not None else {})
        if errors:
            raise AppError(
                "invalidArguments", f"arguments do not match the input schema of {tool}", errors=errors, tool=tool
            )
        timeout_s = (timeout_ms if timeout_ms is not None else entry.config.tool_timeout_ms) / 1000
        call = _Call(self, server, turn_id, ask)
        entry.calls.append(call)
        token = _current_call.set(call)
        try:
            with anyio.move_on_after(timeout_s) as deadline:
                result = await connection.call_tool(tool, arguments, timeout_s=timeout_s, progress=progress, meta=meta)
            if deadline.cancelled_caught:
                raise AppError("timeout", f"{tool} did not answer within {timeout_s * 1000:.0f} ms; cancelled upstream")
        finally:
            _current_call.reset(token)
            entry.calls.remove(call)
            for scope in tuple(call.elicitations):
                scope.cancel()
        result.pop("resultType", None)  # 2026-era envelope detail: results look the same in both eras
        size = len(json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode())
        if size > MAX_MESSAGE_BYTES:
            raise AppError("responseTooLarge", f"tool result is {size} bytes (max {MAX_MESSAGE_BYTES})")
        if spec.output is not None and not result.get("isError"):
            structured = result.get("structuredContent")
            if structured is None:
                output_errors = [{"path": "", "message": "structuredContent is missing"}]
            else:
                output_errors = _errors(spec.output, structured)
            if output_errors:
                raise AppError(
                    "invalidOutput",
                    f"{tool} returned structuredContent that does not match its output schema",
                    errors=output_errors,
                    result=result,
                )
        return result

    # ------------------------------------------------------------ elicitation

    def _attribute(self, server: str) -> _Call | None:
        """The one waiting call an elicitation belongs to, or None (then it is declined)."""
        entry = self._servers[server]
        call = _current_call.get()
        if call is not None:
            return call if call.runtime is self and call.server == server and call in entry.calls else None
        return entry.calls[0] if len(entry.calls) == 1 else None

    def _elicitation_handler(self, server: str) -> Callable[[Any, Any], Awaitable[Any]]:
        async def handler(_ctx: Any, params: Any) -> Any:
            return await self._elicit(server, params)

        return handler

    async def _elicit(self, server: str, params: Any) -> Any:
        from mcp_types import ElicitResult

        if getattr(params, "mode", "form") != "form":
            return ElicitResult(action="decline")  # URL mode is declined (SPEC §7)
        call = self._attribute(server)
        if call is None or call.ask is None or self._closed:
            log.info("elicitation declined: no single waiting call", server=server, thread_id=self.thread_id)
            return ElicitResult(action="decline")
        raw_schema = params.requested_schema
        schema: dict[str, Any] = (
            raw_schema.model_dump(by_alias=True, mode="json", exclude_none=True)
            if hasattr(raw_schema, "model_dump")
            else dict(raw_schema)
        )
        request = ElicitationRequest(
            thread_id=self.thread_id,
            turn_id=call.turn_id,
            server_name=server,
            mode="form",
            message=params.message,
            requested_schema=schema,
        )
        answer: dict[str, Any] | None = None
        with anyio.CancelScope() as scope:
            call.elicitations.add(scope)
            try:
                answer = await call.ask(request)
            finally:
                call.elicitations.discard(scope)
        return _elicit_result(answer, schema, server)


def _elicit_result(answer: dict[str, Any] | None, schema: dict[str, Any], server: str) -> Any:
    """The client's answer as the SDK result; anything unusable (or content not fitting the schema) is cancel."""
    from mcp_types import ElicitResult

    if answer is None:
        return ElicitResult(action="cancel")
    action = answer.get("action")
    content = answer.get("content")
    if action not in ("accept", "decline", "cancel") or (content is not None and not isinstance(content, dict)):
        return ElicitResult(action="cancel")
    if action != "accept":
        return ElicitResult(action=action)
    errors = _errors(_validator(schema), content if content is not None else {})
    if errors:
        log.info("elicitation answer does not fit the requested schema: cancel", server=server, errors=len(errors))
        return ElicitResult(action="cancel")
    return ElicitResult(action="accept", content=content)
