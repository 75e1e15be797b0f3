"""``SessionSlot``: one live MCP session to one server, supervised in its own task.

The SDK's ``Client`` is not re-entrant and lets transport failures escape ``async with`` as exception groups,
so the whole session lives in one supervisor task that turns every outcome into a typed state. It composes
the session's units: ``connect``, ``refresh``, ``listen`` and ``requests``.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from mcp_runtime.events import EventSink
from mcp_runtime.oauth import needs_login
from mcp_runtime.secrets.configs import revealed
from mcp_runtime.session import requests as _requests
from mcp_runtime.session.connect import handshake, is_modern, open_client
from mcp_runtime.session.errors import classify_session_failure, exit_description
from mcp_runtime.session.fresh import FreshReader
from mcp_runtime.session.heartbeat import heartbeat
from mcp_runtime.session.listen import ListenStream
from mcp_runtime.session.refresh import CallGate, CatalogRefresher
from mcp_runtime.session.state import ConnectionState, dump, ended_state, lost_state
from mcp_runtime.session.stdio import StdioTransport
from mcp_runtime.session.task_call import TaskConnectionLost, UpstreamTask
from mcp_runtime.session.transport import StderrTail, secret_values
from mcp_runtime.session.upstream_guard import SkippedLine, note_skipped
from mcp_runtime.tasks import Spawner, TaskHandle
from protocol.config import McpServerConfig
from protocol.jsonrpc import AppError
from protocol.resource import ResourcesUpdated, ResourceUpdated
from protocol.status import McpTool
from protocol.tool import ToolsUpdated

if TYPE_CHECKING:
    import httpx2
    from mcp import Client

    from mcp_runtime.config.policy import ConfigPolicy

log = structlog.get_logger("mcp_runtime.slot")

ElicitationHandler = Callable[[Any, Any], Awaitable[Any]]
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]
SlotLost = Callable[["SessionSlot"], None]


class SessionSlot:
    """One session to one server: connect, catalog, notifications, calls, reads, subscriptions, close.

    ``on_lost`` is called (synchronously) when a connected session dies; ``elicitation`` None declines every
    elicitation; ``policy`` is the deployment's, handed down by the owner.
    Large because it is the one place a session's lifetime is decided: every request goes through its state
    check and its typed error, next to the supervisor that owns that state.
    """

    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        *,
        env: Mapping[str, str],
        policy: ConfigPolicy,
        sink: EventSink,
        spawner: Spawner,
        thread_id: str | None = None,
        elicitation: ElicitationHandler | None = None,
        on_lost: SlotLost | None = None,
        subscriptions: Iterable[str] = (),
        auth: httpx2.Auth | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.thread_id = thread_id
        self._env = env
        self._policy = policy
        self._sink = sink
        self._spawner = spawner
        self._elicitation = elicitation
        self._on_lost = on_lost
        self._auth = auth
        self._state = ConnectionState()
        self._tail = StderrTail(secret_values(config, env))
        self._client: Client | None = None
        self._transport: Any = None
        self._task: TaskHandle | None = None
        self._ready = anyio.Event()
        self._wake = anyio.Event()
        self._stopping = False
        self._start_error: AppError | None = None
        self._lost_error: AppError | None = None
        self._scope: anyio.CancelScope | None = None
        self._gate = CallGate()
        self._refresher = CatalogRefresher(name, self._gate)
        self._listen = ListenStream(name, subscriptions)
        self._fresh = FreshReader("", thread_id or "", modern=False)
        """How this session's lists are answered from, and kept in, the daemon's fresh listings (SPEC §16)."""
        self.on_elicitation_complete: Callable[[str], None] | None = None
        """Told each URL elicitation the server says is complete (a thread routes it to the connection asked)."""

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
        return frozenset(self._listen.uris)

    @property
    def modern(self) -> bool:
        return is_modern(self._state.protocol_version)

    # ------------------------------------------------------------- lifecycle

    async def start(self) -> ConnectionState:
        """Connect and load the catalog within ``startupTimeoutMs``; raise the typed failure otherwise."""
        if self._task is not None:
            raise RuntimeError("a SessionSlot starts once; build a new one to reconnect")
        self._state = replace(self._state, status="starting")
        self._task = self._spawner.spawn(self._supervise, name=f"mcp:{self.name}")
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
        if self._task is not None:
            with anyio.CancelScope(shield=True):
                await self._task.wait()

    def lose(self, error: AppError) -> None:
        """Record the session as lost and let the supervisor tear it down; the state says so at once, so no status
        row shows a healthy server while its teardown runs. The first cause wins, but a stored login that stopped
        working outranks one recorded before it: a refused refresh breaks the request that asked for it, and that
        session's end may be recorded first, while only a login can help."""
        if self._lost_error is None or (needs_login(error.reason) and not needs_login(self._lost_error.reason)):
            self._lost_error = error
            if self._ready.is_set() and not self._stopping:
                self._state = lost_state(self._state, error, self._state.stderr_tail)
        self._wake.set()

    def _tail_detail(self) -> dict[str, str]:
        tail = self._tail.text()
        return {"stderrTail": tail} if tail else {}

    def _timeout_error(self) -> AppError:
        ms = self.config.startup_timeout_ms
        return AppError(
            "timeout",
            f"server did not start within {ms} ms",
            server=self.name,
            method="initialize",
            timeoutMs=ms,
            **self._tail_detail(),
        )

    async def _supervise(self) -> None:
        error: AppError | None = None
        deadline = anyio.current_time() + self.config.startup_timeout_ms / 1000
        scope = self._scope = anyio.CancelScope(deadline=deadline)
        if self._stopping:
            scope.cancel()
        try:
            with scope:
                config = await revealed(self.name, self.config)
                self._tail = StderrTail(secret_values(config, self._env))
                client, self._transport = open_client(
                    config,
                    self._env,
                    self._tail,
                    self._policy,
                    auth=self._auth,
                    graceful=self._ready.is_set,
                    on_message=self._on_message,
                    elicitation=self._elicitation,
                )
                async with client:
                    elicits = self._elicitation is not None
                    self._state = await handshake(client, self.name, self.config, elicits, self._fresh)
                    if not self.modern:
                        await _requests.resubscribe_legacy(client, self._listen.uris, self.name)
                    await self._serve(client, scope)
            if not self._ready.is_set() and not self._stopping:
                error = self._timeout_error()
        except Exception as exc:  # the SDK raises exception groups; every leaf is classified
            if not self._ready.is_set() and not self._stopping and anyio.current_time() >= deadline:
                error = self._timeout_error()
            else:
                error = classify_session_failure(
                    exc,
                    connected=self._ready.is_set(),
                    transport=self._transport,
                    tail=self._tail_detail(),
                    server=self.name,
                    protocol=self.config.protocol,
                )
        finally:
            self._client = None
        self._finish(error)

    async def _serve(self, client: Client, scope: anyio.CancelScope) -> None:
        """Ready once the 2026 listen stream is acknowledged (or refused): no change is missed after start."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._refresher.run, client.session, self._apply_refresh, self.lose, self._fresh.refreshing())
            if self.modern:
                tg.start_soon(self._listen.run, client)
                await self._listen.opened()
            if isinstance(self._transport, StdioTransport):
                tg.start_soon(self._watch_exit, self._transport)
            elif self.thread_id is None:  # management never sleeps: a dead HTTP server is noticed, not shown live
                version = self._state.protocol_version
                tg.start_soon(partial(heartbeat, client, modern=self.modern, version=version, lose=self.lose))
            scope.deadline = math.inf
            self._client = client
            self._ready.set()
            await self._wake.wait()
            tg.cancel_scope.cancel()

    async def _watch_exit(self, transport: StdioTransport) -> None:
        await transport.exited.wait()
        self.lose(AppError("connectionLost", exit_description(transport)))

    def _finish(self, error: AppError | None) -> None:
        self._state, self._start_error, lost = ended_state(
            self._state,
            name=self.name,
            ready=self._ready.is_set(),
            stopping=self._stopping,
            lost=self._lost_error,
            error=error,
            tail=self._tail.text(),
        )
        if not self._ready.is_set():
            self._ready.set()
            return
        if lost is not None:
            log.info("server_connection_lost", server=self.name, reason=lost.reason, thread_id=self.thread_id)
            if self._on_lost is not None and not self._stopping:
                self._on_lost(self)

    # ---------------------------------------------------------- notifications

    async def _on_message(self, message: Any) -> None:
        """Upstream notifications (both eras arrive here; 2026 ones are tee'd from the listen stream)."""
        import mcp_types as types

        if isinstance(message, SkippedLine):
            note_skipped(message, self.name)
        elif isinstance(message, Exception):
            log.debug("transport_error", server=self.name, error=type(message).__name__)
        elif isinstance(message, types.ToolListChangedNotification):
            self._refresher.mark("tools")
        elif isinstance(message, types.ResourceListChangedNotification):
            self._refresher.mark("resources")
        elif isinstance(message, types.PromptListChangedNotification):
            self._refresher.mark("prompts")
        elif isinstance(message, types.ElicitCompleteNotification):
            if self.on_elicitation_complete is not None:
                self.on_elicitation_complete(message.params.elicitation_id)
        elif isinstance(message, types.ResourceUpdatedNotification):
            self._sink(
                "mcp:resource_updated",
                ResourceUpdated(server=self.name, uri=str(message.params.uri), thread_id=self.thread_id),
            )

    def _apply_refresh(self, kinds: set[str], catalog: dict[str, Any]) -> None:
        self._state = replace(self._state, **catalog)
        if "tools" in kinds:
            self._sink("mcp:tools_updated", ToolsUpdated(server=self.name, thread_id=self.thread_id))
        if "resources" in kinds:
            self._sink("mcp:resources_updated", ResourcesUpdated(server=self.name, thread_id=self.thread_id))

    # -------------------------------------------------------- calls and reads

    @property
    def _request_timeout_s(self) -> float:
        return self.config.tool_timeout_ms / 1000

    def _require(self) -> Client:
        client = self._client
        if client is None or not self.connected:
            raise AppError("notRunning", f"server {self.name} is not connected", server=self.name)
        return client

    @contextmanager
    def _typed_failures(self, *, timeout_ms: float | None = None, **subject: Any) -> Iterator[None]:
        """A request's failure as its typed error; a lost session or a lost login also ends the session. A request
        cut off because the session was already ended for a known cause (a login lost on another connection) fails
        with that cause. What no rule maps (a bug) goes on as it is."""
        try:
            yield
        except TaskConnectionLost:  # the task runs on: the session ends, and the task is followed from the next one
            self.lose(AppError("connectionLost", "the connection broke while a task ran", server=self.name))
            raise
        except Exception as exc:
            limit = timeout_ms if timeout_ms is not None else self.config.tool_timeout_ms
            mapped = _requests.map_error(exc, self.name, self._transport, timeout_ms=limit, **subject)
            if mapped is None:
                raise
            error, lost = mapped
            if lost:
                if error.reason == "connectionLost" and self._lost_error is not None:
                    error = self._lost_error
                else:
                    self.lose(error)
            raise error from exc

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        timeout_s: float,
        progress: ProgressCallback | None = None,
        meta: dict[str, Any] | None = None,
        as_task: bool = False,
        task_started: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """``tools/call`` (as a task when ``as_task``); the result comes back even when ``structuredContent``
        misses its ``outputSchema``."""
        client = self._require()
        with self._gate, self._typed_failures(tool=name, timeout_ms=timeout_s * 1000):
            return await _requests.call_tool(
                client,
                name,
                arguments,
                timeout_s=timeout_s,
                progress=progress,
                meta=meta,
                modern=self.modern,
                relisted=lambda: self._refresher.mark("tools"),
                as_task=as_task,
                task_started=task_started,
                server=self.name,
            )

    async def resume_task(
        self, task: UpstreamTask, *, timeout_s: float, progress: ProgressCallback | None = None
    ) -> dict[str, Any]:
        """Follow a task a broken connection left running, on this (new) session; its result like ``call_tool``'s."""
        client = self._require()
        with self._gate, self._typed_failures(method="tasks/get", timeout_ms=timeout_s * 1000):
            return await _requests.resume_task(client, task, server=self.name, timeout_s=timeout_s, progress=progress)

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> dict[str, Any]:
        client = self._require()
        with self._typed_failures(method="prompts/get"):
            return dump(await client.get_prompt(name, arguments))

    async def complete(self, ref: Any, argument: dict[str, str], context: dict[str, str] | None) -> dict[str, Any]:
        """``completion/complete`` (the caller checks the ``completions`` capability first)."""
        client = self._require()
        with self._typed_failures(method="completion/complete"):
            return dump(await client.session.complete(ref, argument, context))

    async def read_resource(self, uri: str) -> dict[str, Any]:
        client = self._require()
        with self._typed_failures(method="resources/read", uri=uri):
            return dump(await client.read_resource(uri))

    async def subscribe(self, uri: str) -> None:
        """Subscribe to resource updates; returns once the server honours it (both eras)."""
        client = self._require()
        with self._typed_failures(method="resources/subscribe", uri=uri):
            await self._listen.subscribe(client, uri, modern=self.modern, timeout_s=self._request_timeout_s)

    async def unsubscribe(self, uri: str) -> None:
        client = self._require()
        with self._typed_failures(method="resources/unsubscribe", uri=uri):
            await self._listen.unsubscribe(client, uri, modern=self.modern, timeout_s=self._request_timeout_s)
