"""``McpThreadRuntime``: the per-thread owner of session slots and the only place tools execute (SPEC §3, §4).

A model's call must not race its thread's start, so every thread-scoped read and call waits for its servers
(bounded by each one's startup timeout), and a lost session is reconnected on demand. A call keeps the tool it
began with: its input schema is captured when it starts, and it returns the finished ``ToolCallResult``,
projected and archived.

Unused servers sleep (SPEC §4, ``thread_server``; the wire calls them ``idle``): the next call, read, prompt get or
subscribe wakes one first.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from mcp_runtime.catalog.schemas import errors, non_finite
from mcp_runtime.events import EventSink
from mcp_runtime.oauth import logs_in, needs_login
from mcp_runtime.owners import elicitation as _elicitation
from mcp_runtime.owners.base import SlotOwner
from mcp_runtime.owners.deadline import FORM_BACKSTOP_S, CallDeadline, runs_as_task
from mcp_runtime.owners.elicitation import Asker, Call
from mcp_runtime.owners.preview import resource_read_fact
from mcp_runtime.owners.projection import answer_json, project, tool_call_json, unarchived
from mcp_runtime.owners.session_expiry import resent_on_new_session
from mcp_runtime.owners.status import CredentialsStamp
from mcp_runtime.owners.task_resume import across_losses
from mcp_runtime.owners.tasks import BackgroundTasks
from mcp_runtime.owners.thread_server import ThreadServer
from mcp_runtime.owners.url_elicitation import UrlElicitations
from mcp_runtime.owners.wake import announce_changes
from mcp_runtime.session.errors import timeout_error
from mcp_runtime.session.slot import ElicitationHandler, ProgressCallback, SessionSlot
from mcp_runtime.storage.archive import ThreadArchive
from mcp_runtime.tasks import Spawner
from protocol.config import McpServerConfig
from protocol.jsonrpc import AppError
from protocol.status import ServerStatus
from protocol.thread import ResourceReadFact
from protocol.tool import Visibility

if TYPE_CHECKING:
    from mcp_runtime.settings import RuntimeSettings

__all__ = ["McpThreadRuntime"]

log = structlog.get_logger("mcp_runtime.thread")


class McpThreadRuntime(SlotOwner):
    """The session slots of one canonical thread.

    Large because a thread's call is one path from the model's request to its answer: the ready slot (woken,
    reconnected), the call's deadline, tasks and background calls, a resend on a server's new session, and forms
    routed back to the calling connection; split, each part would pass the call's state to the next."""

    def __init__(
        self,
        thread_id: str,
        servers: Mapping[str, McpServerConfig],
        *,
        sink: EventSink,
        env: Mapping[str, str],
        data_dir: Path,
        spawner: Spawner,
        settings: RuntimeSettings,
        archive: ThreadArchive,
        allowed_tools: Sequence[str] | None = None,
        disabled_tools: Sequence[str] | None = None,
        record_fact: Callable[[ResourceReadFact], None] | None = None,
    ) -> None:
        super().__init__(sink=sink, env=env, data_dir=data_dir, spawner=spawner, settings=settings)
        self.thread_id: str = thread_id
        self._servers = {name: ThreadServer(config) for name, config in servers.items()}
        self._filters = (
            list(allowed_tools) if allowed_tools is not None else None,
            list(disabled_tools) if disabled_tools else None,
        )
        self._record_fact = record_fact
        self._archive = archive
        self._closed = False
        self._urls = UrlElicitations(thread_id)
        self.tasks = BackgroundTasks(thread_id, spawner, archive)
        """Its background calls (SPEC §16)."""
        self._sync_due = False
        self._syncing = False

    # ------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Connect every server in the background; returns at once."""
        for name, server in self._servers.items():
            if server.task is None:
                self._spawn(name, server)

    def _spawn(self, name: str, server: ThreadServer) -> None:
        server.ready = anyio.Event()
        server.error = None
        server.waking = server.asleep or bool(server.wake_failures)
        server.asleep = False
        server.task = self._spawner.spawn(self._connect, name, server, name=f"thread-mcp:{name}")

    async def _connect(self, name: str, server: ThreadServer) -> None:
        _elicitation.current_call.set(None)  # a copied context: a session started here must not see a call
        try:
            carried = server.slot.subscriptions if server.slot is not None else ()
            kept = server.slot.state if server.slot is not None else None  # the catalog a woken server had
            try:
                slot = await self._new_slot(
                    name, server.config, subscriptions=carried, elicitation=self._elicitation_handler(name)
                )
            except AppError as exc:
                server.error, server.slot = exc, None
                return
            server.slot = slot
            slot.on_elicitation_complete = functools.partial(self._urls.completed, name)
            try:
                await self._start_slot(name, slot)
            except AppError as exc:
                server.error = exc
            except BaseException:
                server.error = AppError("cancelled", f"start of {name} was interrupted", server=name)
                raise
            else:
                announce_changes(self._sink, name, self.thread_id, kept, slot.state)
                server.kept = slot
                self._schedule_sleep(name, server)
        finally:
            server.woke(server.error)
            server.ready.set()

    # ------------------------------------------------------------------ sleep

    def _schedule_sleep(self, name: str, server: ThreadServer) -> None:
        """A server just connected: it sleeps once unused for its ``idleTimeoutMs`` (never when that is 0)."""
        if server.config.idle_timeout_ms and not self._closed:
            if server.sleeper is not None:
                server.sleeper.cancel()
            server.sleeper = self._spawner.spawn(
                server.sleep_when_due, name, self.thread_id, lambda: self._closed, name=f"thread-sleep:{name}"
            )

    def _use(self, name: str) -> AbstractAsyncContextManager[object]:
        return self._server(name).use()

    async def credentials_changed(self, name: str) -> None:
        """New OAuth tokens for ``name``: its slot is rebuilt to use them; returns once it is connected (or failed,
        bounded by its startup timeout), so a login is announced only with its token in effect."""
        server = self._servers.get(name)
        if server is None or self._closed:
            return
        if server.task is not None:
            await server.task.cancel_and_wait()
        if server.sleeper is not None:
            await server.sleeper.cancel_and_wait()
        if server.slot is not None:
            await server.slot.close()
        self._spawn(name, server)
        await server.ready.wait()

    async def aclose(self) -> None:
        """Close every slot (interrupting starts) and reap every child."""
        self._closed = True
        await self.tasks.aclose()
        async with anyio.create_task_group() as tg:
            for server in self._servers.values():
                if server.slot is not None:
                    tg.start_soon(server.slot.close)
                if server.task is not None:
                    tg.start_soon(server.task.cancel_and_wait)
                if server.sleeper is not None:
                    tg.start_soon(server.sleeper.cancel_and_wait)

    # ----------------------------------------------------------------- reads

    def _server(self, name: str) -> ThreadServer:
        server = self._servers.get(name)
        if server is None:
            raise AppError("unknownServer", f"thread {self.thread_id} has no server named {name}", server=name)
        return server

    def tool_filters(self) -> tuple[list[str] | None, list[str] | None]:
        """The thread's ``allowedTools`` / ``disabledTools`` globs on full tool names."""
        return self._filters

    def _status(self, name: str, server: ThreadServer, stamp: CredentialsStamp) -> ServerStatus:
        error = server.error if server.slot is None else None
        return self._row(
            name, server.config, server.slot, stamp, error=error, starting=server.starting, asleep=server.asleep
        )

    def status(self, name: str) -> ServerStatus:
        return self._status(name, self._server(name), self._credentials_stamp())

    def statuses(self) -> list[ServerStatus]:
        stamp = self._credentials_stamp()
        return [self._status(name, server, stamp) for name, server in sorted(self._servers.items())]

    def _connected(self) -> dict[str, SessionSlot]:
        """Connected slots, and asleep or lost ones: their last catalog is served without waking them."""
        slots = {name: server.catalog_slot() for name, server in self._servers.items()}
        return {name: slot for name, slot in slots.items() if slot is not None}

    async def _settled(self, name: str | None = None) -> None:
        """Wait for the servers still starting, each bounded by its startup timeout (SPEC §4)."""
        servers = [self._server(name)] if name is not None else list(self._servers.values())
        for server in servers:
            if server.starting:
                with anyio.move_on_after(server.config.startup_timeout_ms / 1000):
                    await server.ready.wait()

    async def _ready_slot(self, name: str) -> SessionSlot:
        """Wait for the server's start (itself bounded by its startup timeout); reconnect a lost session."""
        if self._closed:
            raise AppError("threadArchived", f"thread {self.thread_id} is archived")
        server = self._server(name)
        if server.task is None or server.asleep or server.wake_again():
            self._spawn(name, server)  # woken: starting → ready again, with the thread's id
        slot = server.slot
        if server.ready.is_set() and slot is not None and slot.connected:
            return slot  # the common case: no wait, no loop pass
        await server.ready.wait()
        slot = server.slot
        if slot is not None and slot.connected:
            return slot
        # It was connected and was lost since: finish that teardown, then one reconnect on demand (bounded by the
        # stop grace and the startup timeout). A loss needing a user's login is not retried; a machine grant's is,
        # like its start refused for want of a credential the host keeps current (the ID token its single sign-on
        # writes): the daemon reads that credential anew and never resends a refused one.
        lost = server.error is None and slot is not None
        wanting = server.error is not None and needs_login(server.error.reason) and not logs_in(server.config)
        if lost or wanting:
            if slot is not None:
                await slot.close()
            last = slot.state.last_error if lost and slot is not None else server.error
            if last is None or not needs_login(last.reason) or not logs_in(server.config):
                if server.task is None or server.task.done:
                    self._spawn(name, server)
                await server.ready.wait()
                if server.slot is not None and server.slot.connected:
                    return server.slot
        error = server.error
        if error is None and server.slot is not None and server.slot.state.last_error is not None:
            last = server.slot.state.last_error
            error = AppError(last.reason, last.message, server=name)
        raise error or AppError("notRunning", f"server {name} is not connected", server=name)

    def _after_read(self, server: str, uri: str, contents: list[dict[str, Any]]) -> None:
        if self._record_fact is not None:
            self._record_fact(resource_read_fact(server, uri, contents))

    # ----------------------------------------------------------------- calls

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
        channel: Asker | None = None,
        origin: Visibility = "model",
        background: bool = False,
    ) -> bytes:
        """Execute one tool call: its ``ToolCallResult`` JSON (``isError`` results included), projected and with
        its blobs and long text archived, serialized once here (its size is checked on the answer itself). A
        ``background`` call (SPEC §16) runs a tool that may be a task as one."""
        async with self._use(server):
            entry = self._server(server)
            slot = await self._ready_slot(server)
            allowed, disabled = self._filters
            spec = self.catalog.spec(
                server, entry.config, slot.tools, tool, origin, allowed_tools=allowed, disabled_tools=disabled
            )
            problems = errors(spec.input, arguments if arguments is not None else {})
            if problems:
                raise AppError(
                    "invalidArguments", f"arguments do not match the input schema of {tool}", errors=problems, tool=tool
                )
            limit_ms = timeout_ms if timeout_ms is not None else entry.config.tool_timeout_ms
            call = Call(self, server, turn_id, channel)
            entry.calls.append(call)
            token = _elicitation.current_call.set(call)
            try:
                with anyio.CancelScope() as scope:
                    call.deadline = CallDeadline(scope, limit_ms / 1000)  # stops while a form is open
                    timeout_s = limit_ms / 1000 + FORM_BACKSTOP_S
                    send = functools.partial(
                        SessionSlot.call_tool,
                        name=tool,
                        arguments=arguments,
                        timeout_s=timeout_s,
                        progress=progress,
                        meta=meta,
                        as_task=runs_as_task(spec.tool, background=background),
                        task_started=call.task_started,
                    )
                    reconnected = functools.partial(self._ready_slot, server)
                    result = await across_losses(
                        functools.partial(resent_on_new_session, send, slot, reconnected),
                        reconnected,
                        timeout_s=timeout_s,
                        progress=progress,
                        server=server,
                        thread_id=self.thread_id,
                    )
                if scope.cancelled_caught:
                    call.timed_out = True
                    raise timeout_error(server, limit_ms, tool=tool)
            except AppError as exc:
                if exc.reason == "urlElicitationRequired":
                    raise self._urls.required(server, exc, channel.notify if channel is not None else None) from None
                raise
            finally:
                _elicitation.current_call.reset(token)
                entry.calls.remove(call)
                await call.finish()
            result.pop("resultType", None)  # 2026-era envelope detail: results look the same in both eras
            if non_json := non_finite(result.get("structuredContent")):  # it would reach the client as null
                message = f"{tool} returned structuredContent with numbers JSON cannot carry"
                raise AppError("invalidOutput", message, errors=non_json, result=result, server=server)
            projected = project(result, self._archive.new_ref)
            answer = answer_json(result, projected)
            if spec.output is not None and not result.get("isError"):
                structured = result.get("structuredContent")
                if structured is None:
                    output_errors = [{"path": "", "message": "structuredContent is missing"}]
                else:
                    output_errors = errors(spec.output, structured)
                if output_errors:
                    raise AppError(
                        "invalidOutput",
                        f"{tool} returned structuredContent that does not match its output schema",
                        errors=output_errors,
                        result=result,
                        server=server,
                    )
            if projected.entries:  # most results archive nothing: no worker-thread hop on the common path
                put = functools.partial(self._archive.put_unless_full, sync=False)
                stored = await anyio.to_thread.run_sync(put, self.thread_id, projected.entries)
                if not stored:
                    log.warning("archive_full", server=server, tool=tool)
                    return tool_call_json(result, unarchived(result))
                self._sync_archive_soon()
            return answer

    def _sync_archive_soon(self) -> None:
        """The entries answers refer to reach the disk in the background, one flush for all written meanwhile: a
        call that waited for its own, holding its result, would let a burst of large results pile up in memory
        while the disk is slow."""
        self._sync_due = True
        if not self._syncing:
            self._syncing = True
            self._spawner.spawn(self._sync_archive, name=f"archive-sync:{self.thread_id}")

    async def _sync_archive(self) -> None:
        try:
            while self._sync_due:
                self._sync_due = False
                await anyio.to_thread.run_sync(self._archive.sync, self.thread_id)
        finally:
            self._syncing = False

    # ------------------------------------------------------------ elicitation

    def _elicitation_handler(self, server: str) -> ElicitationHandler:
        async def handler(_ctx: Any, params: Any) -> Any:
            call = None if self._closed else _elicitation.attribute(self, server, self._servers[server].calls, params)
            return await _elicitation.elicit(self.thread_id or "", server, call, params, self._urls)

        return handler
