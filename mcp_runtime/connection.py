"""``McpConnection``: one live MCP session to one server, supervised in its own task.

Both owners (the management manager and, later, each thread runtime) use this class; they differ only in the
``thread_id`` stamped on events and in the elicitation handler. The SDK's ``Client`` is not re-entrant and lets
transport failures escape as exception groups from ``async with``, so the whole session lives inside one
supervisor task that turns every outcome into a typed state (``connected``, ``failed`` with ``lastError``, ...).
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from mcp_runtime.catalog import full_name
from mcp_runtime.events import EventSink
from mcp_runtime.limits import MAX_CATALOG_BYTES, MAX_DISCOVERY_PAGES, MAX_TOOLS_PER_SERVER
from mcp_runtime.transport import REASON_MARKER, StderrTail, StdioTransport, build_transport, secret_values
from protocol.config import McpServerConfig
from protocol.jsonrpc import REASON_CODES, AppError
from protocol.resource import ResourcesUpdated, ResourceUpdated
from protocol.server import AuthStatus, ErrorInfo, McpTool, RuntimeStatus, ServerStatus
from protocol.tool import ToolsUpdated

if TYPE_CHECKING:
    import httpx2
    from mcp import Client
    from mcp.client.session import ClientRequestContext
    from mcp_types import ElicitRequestParams, ElicitResult, ErrorData

    ElicitationHandler = Callable[[ClientRequestContext, ElicitRequestParams], Awaitable[ElicitResult | ErrorData]]
else:
    ElicitationHandler = Callable[[Any, Any], Awaitable[Any]]

log = structlog.get_logger("mcp_runtime.connection")

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]
AUTO_DISCOVER_TIMEOUT_S = 1.0
"""``protocol: auto`` must not stall on a server that ignores ``server/discover`` (SDK default: 10 s)."""
REFRESH_DEBOUNCE_S = 0.05
"""Bursts of list_changed notifications collapse into one refresh."""
LISTEN_RETRY_S = 1.0
MODES = {"auto": "auto", "2025-11-25": "legacy", "2026-07-28": "2026-07-28"}
CLIENT_NAME = "mcp-app-server"
CLIENT_VERSION = "0.1.0"


@dataclass(frozen=True)
class ConnectionState:
    """A snapshot of one connection; replaced as a whole, so readers never see a half-updated catalog."""

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


def server_status(
    name: str, state: ConnectionState, auth: AuthStatus, runtime: RuntimeStatus | None = None
) -> ServerStatus:
    """The status row of a server from its connection's cached state (both owners report the same shape)."""
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
        last_error=state.last_error,
        stderr_tail=state.stderr_tail,
    )


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _marked_reason(error: Any) -> AppError | None:
    """A refusal our HTTP transport synthesized (redirect, 401, oversized body) back as its typed error."""
    data = getattr(error, "data", None)
    message = str(getattr(error, "message", ""))
    if isinstance(data, dict) and data.get(REASON_MARKER) in REASON_CODES:
        details = {k: v for k, v in data.items() if k != REASON_MARKER}
        return AppError(str(data[REASON_MARKER]), message, **details)
    if f"{REASON_MARKER}=responseTooLarge" in message:
        return AppError("responseTooLarge", "response body over the 4 MiB limit")
    return None


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


@functools.lru_cache(maxsize=4096)
def _schema_problem(text: str) -> str | None:
    """Why a JSON Schema (given as canonical JSON) is invalid, or None.

    Checking against the 2020-12 meta-schema costs about a millisecond; servers repeat schemas across
    tools, restarts and owners, so each distinct schema is checked once.
    """
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    schema = json.loads(text)
    if not isinstance(schema, dict):
        return "is not an object"
    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        return exc.message[:200]
    return None


def validate_tools(server: str, tools: list[dict[str, Any]]) -> list[McpTool]:
    """SPEC §5 limits and names; any violation fails the whole registration."""
    if len(tools) > MAX_TOOLS_PER_SERVER:
        raise AppError(
            "tooManyTools", f"server lists {len(tools)} tools (max {MAX_TOOLS_PER_SERVER})", limit=MAX_TOOLS_PER_SERVER
        )
    size = len(json.dumps(tools, separators=(",", ":")).encode())
    if size > MAX_CATALOG_BYTES:
        raise AppError(
            "catalogTooLarge", f"tool catalog is {size} bytes (max {MAX_CATALOG_BYTES})", limit=MAX_CATALOG_BYTES
        )
    seen: set[str] = set()
    result: list[McpTool] = []
    for raw in tools:
        name = str(raw.get("name", ""))
        full_name(server, name)  # the catalog module owns the naming rule (charset, mcp__<server>__<tool> length)
        if name in seen:
            raise AppError("invalidToolName", f"tool {name} is listed twice", server=server, tool=name)
        seen.add(name)
        for key in ("inputSchema", "outputSchema"):
            schema = raw.get(key)
            if schema is None and key == "outputSchema":
                continue
            problem = _schema_problem(json.dumps(schema, sort_keys=True))
            if problem is not None:
                raise AppError("startupFailed", f"tool {name} has an invalid {key}: {problem}", tool=name)
        result.append(McpTool.model_validate(raw))
    return result


def _import_sdk() -> None:
    import mcp.client.stdio
    import mcp.client.streamable_http  # noqa: F401


async def load_sdk() -> None:
    """Import the SDK's client side in a worker thread (about a second the first time on this machine).

    Imported inside a start, it would stall the event loop, and with it every status read, while a server
    is already announced as starting; from a worker thread the loop keeps answering.
    """
    if "mcp.client.streamable_http" not in sys.modules:
        await anyio.to_thread.run_sync(_import_sdk)


def _plain_client() -> type[Client]:
    from mcp import Client

    return Client


def _probe_bounded_client() -> type[Client]:
    """``Client`` whose first ``server/discover`` probe gives up after 1 s (``protocol: auto``).

    The SDK's probe timeout is a process-wide module global (10 s). Only the first probe is shortened: when
    the fallback ``initialize`` proves the server modern (-32022), the SDK re-probes a server that is alive,
    and a slow-starting server must not fail that second probe. Both stay bounded by the startup timeout.
    """
    from mcp import Client
    from mcp.shared.exceptions import MCPError
    from mcp_types import REQUEST_TIMEOUT

    class ProbeBoundedClient(Client):
        async def _build_session(self, exit_stack: Any) -> Any:
            session = await super()._build_session(exit_stack)
            probe = session.send_discover
            first = True

            async def send_discover(version: str) -> dict[str, Any]:
                nonlocal first
                if not first:
                    return await probe(version)
                first = False
                with anyio.move_on_after(AUTO_DISCOVER_TIMEOUT_S):
                    return await probe(version)
                raise MCPError(REQUEST_TIMEOUT, "server/discover was not answered")

            session.send_discover = send_discover
            return session

    return ProbeBoundedClient


@functools.cache
def _call_result_adapter() -> Any:
    """Built once: a pydantic TypeAdapter over the result union costs about a millisecond to construct."""
    import mcp_types as types
    from pydantic import TypeAdapter

    return TypeAdapter(types.CallToolResult | types.InputRequiredResult)


async def _decline(_ctx: Any, _params: Any) -> Any:
    """Management connections refuse every elicitation (SPEC §3): the server gets ``decline``."""
    from mcp_types import ElicitResult

    return ElicitResult(action="decline")


class McpConnection:
    """One session to one server: connect, catalog, notifications, calls, reads, subscriptions, close.

    ``on_lost`` is called (synchronously) when a connected session dies (``connectionLost``), so an owner can
    schedule a restart. ``elicitation`` None means the connection declares no elicitation capability and
    answers any elicitation with ``decline``.
    """

    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        *,
        env: Mapping[str, str],
        sink: EventSink,
        thread_id: str | None = None,
        elicitation: ElicitationHandler | None = None,
        on_lost: Callable[[McpConnection], None] | None = None,
        subscriptions: Iterable[str] = (),
        auth: httpx2.Auth | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.thread_id = thread_id
        self._env = env
        self._sink = sink
        self._elicitation = elicitation
        self._on_lost = on_lost
        self._auth = auth
        self._state = ConnectionState()
        self._tail = StderrTail(secret_values(config, env))
        self._client: Client | None = None
        self._transport: Any = None
        self._task: asyncio.Task[None] | None = None
        self._ready = anyio.Event()
        self._wake = anyio.Event()
        self._stopping = False
        self._start_error: AppError | None = None
        self._lost_error: AppError | None = None
        self._scope: anyio.CancelScope | None = None
        self._subscriptions: set[str] = set(subscriptions)
        self._dirty: set[str] = set()
        self._dirty_event = anyio.Event()
        self._in_flight = 0
        self._idle = anyio.Event()
        self._idle.set()
        self._listen_wanted = 0
        self._listen_done = -1
        self._listen_error: BaseException | None = None
        self._listen_changed = anyio.Event()
        self._listen_progress = anyio.Event()

    # ----------------------------------------------------------------- state

    @property
    def state(self) -> ConnectionState:
        return self._state

    @property
    def connected(self) -> bool:
        """Connected and usable: a session whose loss is recorded (teardown in progress) is not."""
        return self._state.status == "connected" and self._lost_error is None

    @property
    def tools(self) -> list[McpTool]:
        return self._state.tools

    @property
    def pid(self) -> int | None:
        """The stdio server's pid (also its process group id) while it runs."""
        transport = self._transport
        return transport.pid if isinstance(transport, StdioTransport) and not transport.exited.is_set() else None

    @property
    def subscriptions(self) -> frozenset[str]:
        return frozenset(self._subscriptions)

    # ------------------------------------------------------------- lifecycle

    async def start(self) -> ConnectionState:
        """Connect and load the catalog within ``startupTimeoutMs``; raise the typed failure otherwise."""
        if self._task is not None:
            raise RuntimeError("an McpConnection starts once; build a new one to reconnect")
        self._state = replace(self._state, status="starting")
        self._task = asyncio.get_running_loop().create_task(self._supervise(), name=f"mcp:{self.name}")
        try:
            await self._ready.wait()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.close()
            raise
        if self._start_error is not None:
            raise self._start_error
        return self._state

    async def close(self) -> None:
        """Stop the session and reap the server (its whole process group); interrupts a start in progress."""
        self._stopping = True
        self._wake.set()
        if not self._ready.is_set() and self._scope is not None:
            self._scope.cancel()
        task = self._task
        if task is not None and not task.done():
            with anyio.CancelScope(shield=True):
                await asyncio.wait({task})

    def _lose(self, error: AppError) -> None:
        if self._lost_error is None:
            self._lost_error = error
        self._wake.set()

    async def _supervise(self) -> None:
        from mcp_types import Implementation

        mode = MODES[self.config.protocol]
        error: AppError | None = None
        deadline = anyio.current_time() + self.config.startup_timeout_ms / 1000
        scope = anyio.CancelScope(deadline=deadline)
        self._scope = scope
        if self._stopping:
            scope.cancel()
        try:
            with scope:
                self._transport = build_transport(self.config, self._env, self._tail, auth=self._auth)
                if isinstance(self._transport, StdioTransport):
                    self._transport.graceful = self._ready.is_set
                client_class = _probe_bounded_client() if mode == "auto" else _plain_client()
                client = client_class(
                    self._transport,
                    mode=mode,
                    read_timeout_seconds=self.config.tool_timeout_ms / 1000,
                    message_handler=self._on_message,
                    elicitation_callback=self._elicitation,
                    client_info=Implementation(name=CLIENT_NAME, version=CLIENT_VERSION),
                    cache=None,
                )
                async with client:
                    await self._handshake_done(client)
                    await self._serve(client, scope)
            if not self._ready.is_set() and not self._stopping:
                error = self._timeout_error()
        except Exception as exc:  # the SDK raises exception groups; every leaf is classified
            if not self._ready.is_set() and not self._stopping and anyio.current_time() >= deadline:
                error = self._timeout_error()
            else:
                error = self._classify(exc)
        finally:
            self._client = None
        self._finish(error)

    def _timeout_error(self) -> AppError:
        return AppError(
            "timeout",
            f"server did not start within {self.config.startup_timeout_ms} ms",
            **self._tail_detail(),
        )

    def _tail_detail(self) -> dict[str, str]:
        tail = self._tail.text()
        return {"stderrTail": tail} if tail else {}

    def _finish(self, error: AppError | None) -> None:
        tail = self._tail.text()
        if not self._ready.is_set():
            if self._stopping:
                self._state = replace(self._state, status="cancelled", stderr_tail=tail)
                self._start_error = AppError("cancelled", f"start of {self.name} was interrupted by a stop")
            else:
                error = error or AppError("startupFailed", "server closed the connection during startup")
                self._state = ConnectionState(
                    status="authenticationRequired" if error.reason == "authRequired" else "failed",
                    last_error=ErrorInfo(reason=error.reason, message=error.message),
                    stderr_tail=tail,
                )
                self._start_error = error
            self._ready.set()
            return
        if self._stopping and self._lost_error is None:
            self._state = replace(self._state, status="notStarted", stderr_tail=tail)
            return
        lost = self._lost_error or error or AppError("connectionLost", "the connection to the server closed")
        if lost.reason != "connectionLost" and error is not None and error.reason == "connectionLost":
            lost = error
        self._state = replace(
            self._state,
            status="authenticationRequired" if lost.reason == "authRequired" else "failed",
            last_error=ErrorInfo(reason=lost.reason, message=lost.message),
            stderr_tail=tail,
        )
        log.info("mcp connection lost", server=self.name, reason=lost.reason, thread_id=self.thread_id)
        if self._on_lost is not None and not self._stopping:
            self._on_lost(self)

    def _exit_description(self) -> str:
        transport = self._transport
        if isinstance(transport, StdioTransport):
            if transport.fault is not None:
                return transport.fault.message
            if transport.returncode is not None:
                return f"server process exited (exit code {transport.returncode})"
            return "server process exited"
        return "the server closed the connection"

    def _classify(self, exc: BaseException) -> AppError:
        """One typed error for whatever escaped the SDK (an exception group, usually)."""
        import httpx2
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        leaves = _leaves(exc)
        for leaf in leaves:
            if isinstance(leaf, AppError):
                if leaf.reason == "startupFailed" and "stderrTail" not in leaf.details:
                    leaf.details.update(self._tail_detail())
                return leaf
        for leaf in leaves:
            if (marked := _marked_reason(getattr(leaf, "error", None))) is not None:
                return marked
        connected = self._ready.is_set()
        if isinstance(self._transport, StdioTransport) and self._transport.fault is not None:
            return self._transport.fault
        for leaf in leaves:
            if isinstance(leaf, httpx2.TransportError):
                cause = f"could not reach the server: {type(leaf).__name__}"
                return AppError("connectionLost", cause) if connected else AppError("startupFailed", cause)
        for leaf in leaves:
            if isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
                if connected:
                    return AppError("connectionLost", self._exit_description())
                return AppError("startupFailed", f"{self._exit_description()} during startup", **self._tail_detail())
        leaf = leaves[0]
        if isinstance(leaf, MCPError):
            cause = f"the server refused the handshake: {leaf.message[:200]}"
        else:
            cause = f"{type(leaf).__name__}: {str(leaf)[:200]}"
        log.debug("mcp connection failed", server=self.name, error=type(leaf).__name__)
        if connected:
            return AppError("connectionLost", cause)
        return AppError("startupFailed", cause, **self._tail_detail())

    async def _handshake_done(self, client: Client) -> None:
        """After the SDK's handshake: real capabilities for a pinned 2026 mode, era, catalog."""
        import mcp_types as types

        session = client.session
        if self.config.protocol == "2026-07-28":
            # mode="2026-07-28" adopts a synthesized discover result with empty capabilities: ask for the real one.
            raw = await session.send_discover("2026-07-28")
            session.adopt(types.DiscoverResult.model_validate(raw))
        if self._elicitation is None:
            # Capabilities are already sent without elicitation; from now on any elicitation is declined.
            session._elicitation_callback = _decline
        capabilities = session.server_capabilities
        info = client.server_info
        self._state = ConnectionState(
            status="starting",
            server_info=_dump(info) if info is not None else None,
            capabilities=_dump(capabilities) if capabilities is not None else None,
            protocol_version=client.protocol_version,
            stderr_tail=None,
        )
        catalog = await self._fetch_catalog(client, {"tools", "prompts", "resources"})
        self._state = replace(self._state, status="connected", **catalog)
        for uri in sorted(self._subscriptions):
            if not self.modern:
                try:
                    await self._subscribe_legacy(client, uri)
                except Exception:  # best effort: a restarted connection re-subscribes what it can
                    log.debug("re-subscribe failed", server=self.name)

    @property
    def modern(self) -> bool:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        return self._state.protocol_version in MODERN_PROTOCOL_VERSIONS

    async def _serve(self, client: Client, scope: anyio.CancelScope) -> None:
        """Ready once the 2026 listen stream is acknowledged (or refused): no change is missed after start."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._refresh_worker, client)
            if self.modern:
                tg.start_soon(self._listen_worker, client)
                while self._listen_done < 0:
                    await self._listen_progress.wait()
            if isinstance(self._transport, StdioTransport):
                tg.start_soon(self._watch_exit, self._transport)
            scope.deadline = math.inf
            self._client = client
            self._ready.set()
            await self._wake.wait()
            tg.cancel_scope.cancel()

    async def _watch_exit(self, transport: StdioTransport) -> None:
        await transport.exited.wait()
        self._lose(transport.fault or AppError("connectionLost", self._exit_description()))

    # --------------------------------------------------------------- catalog

    async def _pages(self, fetch: Callable[[str | None], Awaitable[Any]], attr: str, limit: int | None) -> list[Any]:
        items: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_DISCOVERY_PAGES):
            page = await fetch(cursor)
            items.extend(getattr(page, attr))
            if limit is not None and len(items) > limit:
                raise AppError("tooManyTools", f"server lists more than {limit} tools", limit=limit)
            cursor = page.next_cursor
            if not cursor:
                return items
        raise AppError(
            "tooManyPages", f"{attr} listing has more than {MAX_DISCOVERY_PAGES} pages", limit=MAX_DISCOVERY_PAGES
        )

    async def _fetch_catalog(self, client: Client, kinds: set[str]) -> dict[str, Any]:
        """Every page of the requested lists; the tools are validated as one registration."""
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        session = client.session
        caps = session.server_capabilities or types.ServerCapabilities()

        def params(cursor: str | None) -> types.PaginatedRequestParams | None:
            return types.PaginatedRequestParams(cursor=cursor) if cursor else None

        async def optional(fetch: Callable[[str | None], Awaitable[Any]], attr: str) -> list[dict[str, Any]]:
            try:
                return [_dump(item) for item in await self._pages(fetch, attr, None)]
            except MCPError as exc:
                if exc.code == types.METHOD_NOT_FOUND:
                    return []
                raise

        result: dict[str, Any] = {}
        if "tools" in kinds:
            tools = []
            if caps.tools is not None:
                raw = await self._pages(lambda c: session.list_tools(params=params(c)), "tools", MAX_TOOLS_PER_SERVER)
                tools = [_dump(tool) for tool in raw]
            result["tools"] = validate_tools(self.name, tools)
        if "prompts" in kinds and caps.prompts is not None:
            result["prompts"] = await optional(lambda c: session.list_prompts(params=params(c)), "prompts")
        if "resources" in kinds and caps.resources is not None:
            result["resources"] = await optional(lambda c: session.list_resources(params=params(c)), "resources")
            result["resource_templates"] = await optional(
                lambda c: session.list_resource_templates(params=params(c)), "resource_templates"
            )
        return result

    async def _on_message(self, message: Any) -> None:
        """Upstream notifications (both eras arrive here; 2026 ones are tee'd from the listen stream)."""
        import mcp_types as types

        if isinstance(message, Exception):
            log.debug("transport reported an error", server=self.name, error=type(message).__name__)
            return
        if isinstance(message, types.ToolListChangedNotification):
            self._mark_dirty("tools")
        elif isinstance(message, types.ResourceListChangedNotification):
            self._mark_dirty("resources")
        elif isinstance(message, types.PromptListChangedNotification):
            self._mark_dirty("prompts")
        elif isinstance(message, types.ResourceUpdatedNotification):
            self._sink(
                "mcp:resource_updated",
                ResourceUpdated(server=self.name, uri=str(message.params.uri), thread_id=self.thread_id),
            )

    def _mark_dirty(self, kind: str) -> None:
        self._dirty.add(kind)
        self._dirty_event.set()

    async def _refresh_worker(self, client: Client) -> None:
        """Debounced catalog refresh; tools are refreshed only while no call is in flight on this connection."""
        from mcp.shared.exceptions import MCPError

        while True:
            await self._dirty_event.wait()
            await anyio.sleep(REFRESH_DEBOUNCE_S)
            while self._in_flight:
                await self._idle.wait()
            self._dirty_event = anyio.Event()
            kinds, self._dirty = self._dirty, set()
            try:
                catalog = await self._fetch_catalog(client, kinds)
            except AppError as exc:
                self._lose(exc)  # an invalid catalog fails the registration, as at connect
                return
            except (MCPError, TimeoutError) as exc:
                log.warning("catalog refresh failed", server=self.name, error=type(exc).__name__)
                continue
            self._state = replace(self._state, **catalog)
            if "tools" in kinds:
                self._sink("mcp:tools_updated", ToolsUpdated(server=self.name, thread_id=self.thread_id))
            if "resources" in kinds:
                self._sink("mcp:resources_updated", ResourcesUpdated(server=self.name, thread_id=self.thread_id))

    async def _listen_worker(self, client: Client) -> None:
        """2026 era: one ``subscriptions/listen`` stream for list changes and resource subscriptions.

        Re-opened when the subscribed URIs change; ``subscribe`` waits for the acknowledgment of its generation.
        """
        from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
        from mcp.shared.exceptions import MCPError

        caps = client.session.server_capabilities
        while True:
            generation = self._listen_wanted
            changed = self._listen_changed = anyio.Event()
            uris = sorted(self._subscriptions)
            try:
                async with client.listen(
                    tools_list_changed=caps is not None and caps.tools is not None,
                    prompts_list_changed=caps is not None and caps.prompts is not None,
                    resources_list_changed=caps is not None and caps.resources is not None,
                    resource_subscriptions=uris,
                ) as subscription:
                    honored = set(subscription.honored.resource_subscriptions or ())
                    missing = [uri for uri in uris if uri not in honored]
                    self._listen_settled(
                        generation,
                        AppError("upstreamError", "the server did not accept the resource subscription")
                        if missing
                        else None,
                    )
                    async with anyio.create_task_group() as tg:

                        async def drain(scope: anyio.CancelScope = tg.cancel_scope) -> None:
                            async for _event in subscription:
                                pass  # events reach _on_message through the session's tee
                            scope.cancel()

                        tg.start_soon(drain)
                        await changed.wait()
                        tg.cancel_scope.cancel()
                    if not changed.is_set():
                        await anyio.sleep(LISTEN_RETRY_S)  # the server ended the stream: re-listen, not spin
            except (MCPError, SubscriptionLost, ListenNotSupportedError, TimeoutError) as exc:
                log.debug("subscriptions/listen failed", server=self.name, error=type(exc).__name__)
                self._listen_settled(generation, exc)
                await changed.wait()

    def _listen_settled(self, generation: int, error: BaseException | None) -> None:
        self._listen_done = generation
        self._listen_error = error
        self._listen_progress.set()
        self._listen_progress = anyio.Event()

    # ----------------------------------------------------------------- calls

    def _require(self) -> Client:
        client = self._client
        if client is None or not self.connected:
            raise AppError("notRunning", f"server {self.name} is not connected", server=self.name)
        return client

    def _map(self, exc: BaseException) -> AppError:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
        from pydantic import ValidationError

        if isinstance(exc, AppError):
            return exc
        if isinstance(exc, MCPError):
            if (marked := _marked_reason(exc.error)) is not None:
                if marked.reason == "authRequired":
                    self._lose(marked)
                return marked
            if exc.code == REQUEST_TIMEOUT:
                return AppError("timeout", "the server did not answer in time; the request was cancelled upstream")
            if exc.code == CONNECTION_CLOSED:
                transport = self._transport
                fault = transport.fault if isinstance(transport, StdioTransport) else None
                error = fault or AppError("connectionLost", self._exit_description())
                self._lose(error)
                return error
            return AppError("upstreamError", exc.message[:1000], mcpCode=exc.code, mcpMessage=exc.message[:1000])
        if isinstance(exc, ValidationError):
            return AppError("upstreamError", "the server returned a malformed result")
        if isinstance(exc, TimeoutError):
            return AppError("timeout", "the server did not answer in time")
        raise exc

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        timeout_s: float,
        progress: ProgressCallback | None = None,
        meta: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``tools/call`` sent through the session ourselves: the result comes back even when its
        ``structuredContent`` does not match the ``outputSchema`` (the caller validates and reports)."""
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        client = self._require()
        session = client.session
        adapter = _call_result_adapter()

        async def send(responses: types.InputResponses | None, state: str | None) -> Any:
            request = types.CallToolRequest(
                params=types.CallToolRequestParams(
                    name=name, arguments=arguments, input_responses=responses, request_state=state, _meta=meta
                )
            )
            return await session.send_request(
                request, adapter, request_read_timeout_seconds=timeout_s, progress_callback=progress
            )

        async def send_relisting(responses: types.InputResponses | None, state: str | None) -> Any:
            try:
                return await send(responses, state)
            except MCPError as exc:
                if exc.code != types.HEADER_MISMATCH or not self.modern:
                    raise
                # 2026 recovery: the session's per-tool header map is stale; re-list, resend once.
                self._mark_dirty("tools")
                await self._pages(
                    lambda c: session.list_tools(params=types.PaginatedRequestParams(cursor=c) if c else None),
                    "tools",
                    None,
                )
                return await send(responses, state)

        if not self._in_flight:
            self._idle = anyio.Event()
        self._in_flight += 1
        try:
            first = await send_relisting(None, None)
            result = await client._drive_input_required(first, send_relisting)
        except Exception as exc:
            raise self._map(exc) from exc
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self._idle.set()
        return _dump(result)

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> dict[str, Any]:
        client = self._require()
        try:
            return _dump(await client.get_prompt(name, arguments))
        except Exception as exc:
            raise self._map(exc) from exc

    async def read_resource(self, uri: str) -> dict[str, Any]:
        client = self._require()
        try:
            return _dump(await client.read_resource(uri))
        except Exception as exc:
            raise self._map(exc) from exc

    async def _subscribe_legacy(self, client: Client, uri: str, subscribe: bool = True) -> None:
        import mcp_types as types

        request: Any = (
            types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
            if subscribe
            else types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))
        )
        await client.session.send_request(request, types.EmptyResult)

    async def subscribe(self, uri: str) -> None:
        """2025 era: ``resources/subscribe``; 2026 era: re-open the listen stream with the URI, wait for its ack."""
        client = self._require()
        if not self.modern:
            try:
                await self._subscribe_legacy(client, uri)
            except Exception as exc:
                raise self._map(exc) from exc
            self._subscriptions.add(uri)
            return
        self._subscriptions.add(uri)
        error = await self._relisten()
        if error is not None:
            self._subscriptions.discard(uri)
            await self._relisten()
            raise self._map(error)

    async def unsubscribe(self, uri: str) -> None:
        client = self._require()
        if uri not in self._subscriptions:
            return
        self._subscriptions.discard(uri)
        if not self.modern:
            try:
                await self._subscribe_legacy(client, uri, subscribe=False)
            except Exception as exc:
                raise self._map(exc) from exc
            return
        await self._relisten()

    async def _relisten(self) -> BaseException | None:
        self._listen_wanted += 1
        generation = self._listen_wanted
        self._listen_changed.set()
        with anyio.fail_after(self.config.tool_timeout_ms / 1000):
            while self._listen_done < generation:
                await self._listen_progress.wait()
        return self._listen_error
