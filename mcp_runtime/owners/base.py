"""``SlotOwner``: what both owners of session slots share (SPEC §3).

The management manager and a thread runtime connect, report status and read the same way, so that lives here
once; they differ only in policy, through the hooks :meth:`_ready_slot` (answer now, or wait and reconnect on
demand) and :meth:`_settled` (whether a read waits for servers still starting).
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from mcp_runtime._sdk_compat import load_sdk
from mcp_runtime.catalog.cache import CatalogCache, SearchAnswer
from mcp_runtime.events import EventSink
from mcp_runtime.oauth import needs_login
from mcp_runtime.oauth.credentials import CREDENTIALS_FILE
from mcp_runtime.owners.auth import auth_status, connection_auth, watch_login
from mcp_runtime.owners.completion import complete
from mcp_runtime.owners.preview import UI_SCHEME, checked_view, preview_content, typed_contents, view_too_large
from mcp_runtime.owners.status import CredentialsStamp, Detail, RowKey, StatusCache
from mcp_runtime.secrets.configs import revealed
from mcp_runtime.session.slot import ElicitationHandler, SessionSlot, SlotLost
from mcp_runtime.session.state import error_info, server_status
from mcp_runtime.tasks import Spawner
from protocol.config import McpServerConfig
from protocol.jsonrpc import AppError
from protocol.prompt import PromptGetResult, PromptView
from protocol.resource import ResourceReadResult, ResourceTemplateView, ResourceView
from protocol.secrets import masked
from protocol.status import AuthStatus, ServerStatus, StartupState, StartupStatusUpdated
from protocol.tool import ToolView

if TYPE_CHECKING:
    from mcp_runtime.settings import RuntimeSettings

log = structlog.get_logger("mcp_runtime.owners")


class SlotOwner(ABC):
    """The shared half of an owner; subclasses hold the slots and decide when a server is ready.

    Large because every read both owners serve (status rows, lists, prompts, resources, views, completions) is
    written once here over a slot, so the two owners differ only in policy."""

    thread_id: str | None = None

    def __init__(
        self, *, sink: EventSink, env: Mapping[str, str], data_dir: Path, spawner: Spawner, settings: RuntimeSettings
    ) -> None:
        self._sink = sink
        self._env = env
        self._settings = settings
        """What the command line decided (the deployment's policy), handed over once by start-up."""
        self._data_dir = data_dir
        self._spawner = spawner
        self.catalog = CatalogCache()
        self._statuses = StatusCache()
        self._credentials = os.fspath(data_dir / CREDENTIALS_FILE)
        self._starts: dict[str, float] = {}

    # ------------------------------------------------------------------ hooks

    @abstractmethod
    async def _ready_slot(self, name: str) -> SessionSlot:
        """The connected slot of ``name`` for a read or call (``unknownServer`` / ``notRunning`` otherwise)."""

    @abstractmethod
    def _connected(self) -> dict[str, SessionSlot]:
        """Every slot whose catalog the owner serves, by server name: the connected ones (and a thread's asleep)."""

    @abstractmethod
    async def _settled(self, name: str | None = None) -> None:
        """Return once ``name`` (or every server) is no longer starting (the thread policy) or at once."""

    @abstractmethod
    def status(self, name: str) -> ServerStatus:
        """The status row of one server from cached state (``unknownServer`` for a name the owner lacks)."""

    @abstractmethod
    def statuses(self) -> list[ServerStatus]:
        """Every status row from cached state, by name."""

    async def server_statuses(self, name: str | None = None) -> list[ServerStatus]:
        """Status rows once the servers asked about are no longer starting (a thread waits; management not)."""
        if name is not None:
            self.status(name)
        await self._settled(name)
        return [self.status(name)] if name is not None else self.statuses()

    def status_list_json(self, rows: list[ServerStatus], detail: Detail, next_cursor: str | None) -> bytes:
        """The ``mcpServerStatus/list`` answer for rows this owner returned, at ``detail`` (kept between reads)."""
        return self._statuses.list_json(rows, detail, next_cursor)

    def start_json(self, row: ServerStatus) -> bytes:
        """The ``mcpServer/start`` answer for a row this owner returned."""
        return self._statuses.start_json(row)

    def tool_filters(self) -> tuple[list[str] | None, list[str] | None]:
        """The owner's ``allowedTools`` / ``disabledTools`` globs on full tool names (none for management)."""
        return None, None

    # ------------------------------------------------------------- lifecycle

    def _publish(self, name: str, status: StartupState, error: AppError | None = None) -> None:
        reauth = error is not None and needs_login(error.reason)
        self._sink(
            "mcpServer/startupStatus/updated",
            StartupStatusUpdated(
                thread_id=self.thread_id,
                name=name,
                status=status,
                error=error_info(error) if error is not None else None,
                failure_reason="reauthenticationRequired" if reauth else None,
            ),
        )
        self._log_start(name, status, error)

    def _log_start(self, name: str, status: StartupState, error: AppError | None) -> None:
        """The session's story: each start and how it ended, by whom and how long it took; a failure once, at
        ``warning``, with its typed reason, the message and data a status row shows (secret-named fields masked)."""
        owner = {"owner": "management" if self.thread_id is None else "thread", "thread_id": self.thread_id}
        if status == "starting":
            self._starts[name] = time.monotonic()
            log.info("server_starting", server=name, **owner)
            return
        began = self._starts.pop(name, None)
        duration_ms = round((time.monotonic() - began) * 1000) if began is not None else None
        if error is None:
            log.info(f"server_{status}", server=name, duration_ms=duration_ms, **owner)
            return
        log.warning(
            f"server_{status}",
            server=name,
            duration_ms=duration_ms,
            **owner,
            reason=error.reason,
            message=error_info(error).message,
            data=masked(error.details),
        )

    async def _new_slot(
        self,
        name: str,
        config: McpServerConfig,
        *,
        subscriptions: Iterable[str] = (),
        elicitation: ElicitationHandler | None = None,
        on_lost: SlotLost | None = None,
    ) -> SessionSlot:
        """Announce ``starting`` and build the slot; a server needing a login fails here (published, raised)."""
        await load_sdk()
        self._publish(name, "starting")
        try:
            auth = connection_auth(name, await revealed(name, config, "oauth."), self._data_dir, self._env)
        except AppError as exc:
            self._publish(name, "failed", exc)
            raise
        slot = SessionSlot(
            name,
            config,
            env=self._env,
            policy=self._settings.policy,
            sink=self._sink,
            spawner=self._spawner,
            thread_id=self.thread_id,
            elicitation=elicitation,
            on_lost=lambda lost: self._announce_loss(lost, on_lost),
            subscriptions=subscriptions,
            auth=auth,
        )
        watch_login(auth, slot.lose)
        return slot

    def _announce_loss(self, slot: SessionSlot, then: SlotLost | None) -> None:
        """A session lost after it was ready says why at once: ``failed`` with its typed error (its row says the
        same); then the owner's own policy (a restart with backoff, or a reconnect on the next use)."""
        last = slot.state.last_error
        error = AppError(last.reason, last.message, server=slot.name) if last is not None else None
        self._publish(slot.name, "failed", error or AppError("connectionLost", "the connection was lost"))
        if then is not None:
            then(slot)

    async def _start_slot(self, name: str, slot: SessionSlot) -> None:
        """Start the slot and publish how it ended: ``ready``, ``failed`` or ``cancelled`` (then re-raise)."""
        try:
            await slot.start()
        except AppError as exc:
            if exc.reason == "cancelled":
                self._publish(name, "cancelled")
            else:
                self._publish(name, "failed", exc)
            raise
        except BaseException:
            self._publish(name, "cancelled")
            raise
        self._publish(name, "ready")

    def _row(
        self,
        name: str,
        config: McpServerConfig,
        slot: SessionSlot | None,
        stamp: CredentialsStamp,
        *,
        error: AppError | None = None,
        starting: bool = False,
        disabled: bool = False,
        asleep: bool = False,
    ) -> ServerStatus:
        """The status row: a failure before any slot existed, ``starting``, ``idle`` (asleep), or the slot's own
        state; kept, and built again only when what it is made of changes. ``stamp``: :meth:`_credentials_stamp`,
        read once for all the rows of one answer."""
        auth = self._statuses.auth(name, config, stamp, lambda: auth_status(name, config, self._data_dir))
        state = None if slot is None else slot.state
        key = RowKey(auth, starting, disabled, asleep, config, slot, state, error)
        return self._statuses.row(
            name,
            key,
            lambda: self._build_row(name, slot, auth, error=error, starting=starting, disabled=disabled, asleep=asleep),
        )

    def _credentials_stamp(self) -> CredentialsStamp:
        try:
            found = os.stat(self._credentials)
        except OSError:
            return None
        return (found.st_ino, found.st_mtime_ns, found.st_size)

    def _forget_kept(self, name: str) -> None:
        """A stopped or deleted server: what is kept about it (its row, its views, the slot and tools they hold
        on to) goes with it, so memory follows what is live."""
        self._statuses.forget(name)
        self.catalog.forget(name)

    def _build_row(
        self,
        name: str,
        slot: SessionSlot | None,
        auth: AuthStatus,
        *,
        error: AppError | None,
        starting: bool,
        disabled: bool,
        asleep: bool,
    ) -> ServerStatus:
        if asleep and slot is not None:
            return server_status(name, slot.state, auth, "idle")
        if starting and slot is not None and slot.state.status != "starting":
            slot = None  # the previous session's slot, being replaced: the row says ``starting``
        if slot is None and error is not None:
            runtime = "authenticationRequired" if needs_login(error.reason) else "failed"
            return ServerStatus(name=name, runtime_status=runtime, auth_status=auth, last_error=error_info(error))
        if slot is None:
            runtime = "starting" if starting else "disabled" if disabled else "notStarted"
            return ServerStatus(name=name, runtime_status=runtime, auth_status=auth)
        state = slot.state
        return server_status(name, state, auth, "disabled" if state.status == "notStarted" and disabled else None)

    # ----------------------------------------------------------------- reads

    def _use(self, name: str) -> AbstractAsyncContextManager[object]:
        """Held around every request to ``name``'s server: a thread's unused servers sleep, and this is what keeps
        one awake (the management owner's never sleep)."""
        return nullcontext()

    async def _slots(self, server: str | None) -> dict[str, SessionSlot]:
        """The slots a list reads its catalog from (``server``'s alone when given), without waking one asleep."""
        await self._settled(server)
        if server is not None:
            self.status(server)
            slot = self._connected().get(server)
            return {server: slot if slot is not None else await self._ready_slot(server)}
        return self._connected()

    def _views(self) -> CatalogCache:
        """The tool catalog, refreshed from the connected servers' current tool lists."""
        self.catalog.update({name: (slot.config, slot.tools) for name, slot in self._connected().items()})
        return self.catalog

    async def tools(self, server: str | None = None) -> list[ToolView]:
        """Every connected server's tools after its own filters (``mcpTool/list``)."""
        if server is not None:
            self.status(server)
        await self._settled(server)
        return self._views().views(server)

    async def tools_for_context(
        self, *, caller: str | None, include_deferred: bool
    ) -> tuple[list[ToolView], frozenset[str]]:
        """The tools a model context sees (server and owner filters, deferral, caller), and their full names."""
        await self._settled()
        allowed, disabled = self.tool_filters()
        return self._views().visible(
            caller=caller, include_deferred=include_deferred, allowed_tools=allowed, disabled_tools=disabled
        )

    async def search_tools(self, query: str, limit: int, *, caller: str | None) -> SearchAnswer:
        """Ranked search over the tools visible to ``caller`` (deferred ones included); names not found."""
        await self._settled()
        allowed, disabled = self.tool_filters()
        return self._views().search(query, limit, caller=caller, allowed_tools=allowed, disabled_tools=disabled)

    async def prompts(self, server: str | None = None) -> list[PromptView]:
        return [
            PromptView.model_validate({"arguments": [], **prompt, "server": name})
            for name, slot in sorted((await self._slots(server)).items())
            for prompt in slot.state.prompts
        ]

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str] | None = None) -> PromptGetResult:
        async with self._use(server):
            slot = await self._ready_slot(server)
            if not any(p.get("name") == name for p in slot.state.prompts):
                raise AppError("unknownPrompt", f"server {server} has no prompt {name}", server=server, prompt=name)
            return PromptGetResult.model_validate(await slot.get_prompt(name, arguments))

    complete = complete  # a prompt's or template's argument completed through this owner's connection (SPEC §16)
    async def resources(self, server: str | None = None) -> tuple[list[ResourceView], list[ResourceTemplateView]]:
        slots = sorted((await self._slots(server)).items())
        resources = [ResourceView.model_validate({**r, "server": name}) for name, s in slots for r in s.state.resources]
        templates = [
            ResourceTemplateView.model_validate({**t, "server": name})
            for name, slot in slots
            for t in slot.state.resource_templates
        ]
        return resources, templates

    async def read_resource(self, server: str, uri: str, preview: bool = False) -> ResourceReadResult:
        view = uri.startswith(UI_SCHEME)
        async with self._use(server):
            slot = await self._ready_slot(server)
            try:
                contents: list[dict[str, Any]] = (await slot.read_resource(uri)).get("contents", [])
            except AppError as exc:
                if view and exc.reason == "responseTooLarge":
                    raise view_too_large(server, uri, exc.details.get("size")) from exc
                raise
        if view:
            checked_view(server, uri, contents)
        self._after_read(server, uri, contents)
        if preview and not view:  # a view is rendered whole: never a preview's cut
            contents = [preview_content(c) for c in contents]
        return typed_contents(server, contents)

    @abstractmethod
    def _after_read(self, server: str, uri: str, contents: list[dict[str, Any]]) -> None:
        """What a read leaves behind: a thread records digests; the management owner nothing."""

    async def subscribe(self, server: str, uri: str) -> None:
        async with self._use(server):
            await (await self._ready_slot(server)).subscribe(uri)

    async def unsubscribe(self, server: str, uri: str) -> None:
        async with self._use(server):
            await (await self._ready_slot(server)).unsubscribe(uri)
