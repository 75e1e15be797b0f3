"""``McpClientManager``: the app-scoped, management-only owner of session slots (SPEC §3).

The GUI's reads must never wait on a server, so they answer from cached state at once, and the manager never
executes a tool or lets an elicitation through. Start and stop are serialized per server (a stop interrupts a
start), and a crashed server is restarted with backoff so the settings page recovers on its own.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from mcp_runtime.config.edits import normalized
from mcp_runtime.events import EventSink
from mcp_runtime.oauth import needs_login
from mcp_runtime.owners.base import SlotOwner
from mcp_runtime.owners.status import CredentialsStamp
from mcp_runtime.session.slot import SessionSlot
from mcp_runtime.tasks import Spawner, TaskHandle
from protocol.config import McpServerConfig
from protocol.jsonrpc import AppError
from protocol.status import ServerStatus

if TYPE_CHECKING:
    from mcp_runtime.settings import RuntimeSettings

log = structlog.get_logger("mcp_runtime.management")

BACKOFF_INITIAL_S = 1.0
BACKOFF_MAX_S = 60.0
STABLE_AFTER_S = BACKOFF_MAX_S
"""A connection that stayed up this long resets the backoff."""


@dataclass
class ManagedServer:
    """Everything the management owner knows about one server name (a thread's owner keeps a ``ThreadServer``)."""

    lock: anyio.Lock = field(default_factory=anyio.Lock)
    slot: SessionSlot | None = None
    config: McpServerConfig | None = None
    restart: TaskHandle | None = None
    auth_error: AppError | None = None
    starting: bool = False
    attempts: int = 0
    connected_at: float | None = None
    kept: SessionSlot | None = None
    """The last session that was ready: its catalog stands for the server while it is restarted after a loss."""

    def catalog_slot(self) -> SessionSlot | None:
        slot = self.slot
        return slot if slot is not None and slot.connected else self.kept


class McpClientManager(SlotOwner):
    """Management slots, one per started server name, built from the current store snapshot."""

    def __init__(
        self,
        store_snapshot: Callable[[], dict[str, McpServerConfig]],
        sink: EventSink,
        env: Mapping[str, str],
        data_dir: Path,
        *,
        spawner: Spawner,
        settings: RuntimeSettings,
        starting: Collection[str] = (),
    ) -> None:
        """``starting``: servers already being autostarted (their rows say ``starting`` until their start ends)."""
        super().__init__(sink=sink, env=env, data_dir=data_dir, spawner=spawner, settings=settings)
        self._snapshot = store_snapshot
        self._entries: dict[str, ManagedServer] = {}
        self._closed = False
        self.expect_starts(starting)

    # ----------------------------------------------------------------- reads

    def _config(self, name: str) -> McpServerConfig:
        config = self._snapshot().get(name)
        if config is None:
            raise AppError("unknownServer", f"no server named {name}", server=name)
        return config

    def _status(self, name: str, config: McpServerConfig, stamp: CredentialsStamp) -> ServerStatus:
        entry = self._entries.get(name)
        slot = entry.slot if entry is not None else None
        error = entry.auth_error if entry is not None and slot is None else None
        starting = entry is not None and entry.starting
        return self._row(name, config, slot, stamp, error=error, starting=starting, disabled=not config.enabled)

    def status(self, name: str) -> ServerStatus:
        """From cached state only: never waits on a server that is starting."""
        return self._status(name, self._config(name), self._credentials_stamp())

    def statuses(self) -> list[ServerStatus]:
        stamp = self._credentials_stamp()
        return [self._status(name, config, stamp) for name, config in sorted(self._snapshot().items())]

    async def _ready_slot(self, name: str) -> SessionSlot:
        """The live slot for a read; a server that is not connected now is ``notRunning`` (no waiting)."""
        self._config(name)
        entry = self._entries.get(name)
        if entry is None or entry.slot is None or not entry.slot.connected:
            raise AppError("notRunning", f"server {name} is not connected", server=name)
        return entry.slot

    async def _settled(self, name: str | None = None) -> None:
        """Management reads never wait: a server still starting answers from its cached state."""

    def _after_read(self, server: str, uri: str, contents: list[dict[str, Any]]) -> None:
        """Management reads leave no diagnostics fact (those belong to threads)."""

    def _connected(self) -> dict[str, SessionSlot]:
        """Connected slots, and the last ready one of a server being restarted after a loss (its catalog)."""
        slots = {name: entry.catalog_slot() for name, entry in self._entries.items()}
        return {name: slot for name, slot in slots.items() if slot is not None}

    def pid(self, name: str) -> int | None:
        """The running stdio server's pid (diagnostics and tests), or None."""
        entry = self._entries.get(name)
        return entry.slot.pid if entry is not None and entry.slot is not None else None

    # -------------------------------------------------------------- lifecycle

    def _entry(self, name: str) -> ManagedServer:
        return self._entries.setdefault(name, ManagedServer())

    def expect_starts(self, names: Collection[str]) -> None:
        """These servers are about to be started (``start_enabled``): their rows say ``starting`` already."""
        for name in names:
            self._entry(name).starting = True

    async def start(self, name: str) -> ServerStatus:
        """Connect (or return the live slot's status); publishes starting → ready|failed|cancelled."""
        return await self._start(name, cancel_restart=True)

    async def _start(self, name: str, *, cancel_restart: bool) -> ServerStatus:
        if self._closed:
            raise AppError("notRunning", "the daemon is shutting down")
        config = self._config(name)
        entry = self._entry(name)
        async with entry.lock:
            if cancel_restart:
                self._cancel_restart(entry)
            return await self._start_locked(name, entry, config)

    def _is_live(self, entry: ManagedServer, config: McpServerConfig) -> bool:
        slot = entry.slot
        return (
            slot is not None
            and slot.connected
            and entry.config is not None
            and normalized(entry.config) == normalized(config)
        )

    async def _start_locked(self, name: str, entry: ManagedServer, config: McpServerConfig) -> ServerStatus:
        if self._is_live(entry, config):
            return self._status(name, config, self._credentials_stamp())
        carried: frozenset[str] = frozenset()
        if entry.slot is not None:
            old, entry.slot = entry.slot, None
            carried = old.subscriptions
            await old.close()
        entry.starting = True
        try:
            slot = await self._new_slot(name, config, subscriptions=carried, on_lost=self._lost)
        except AppError as exc:
            entry.auth_error = exc
            raise
        finally:
            entry.starting = False
        entry.auth_error = None
        entry.slot = slot
        entry.config = config
        await self._start_slot(name, slot)
        entry.connected_at = anyio.current_time()
        entry.kept = slot
        return self._status(name, config, self._credentials_stamp())

    async def stop(self, name: str) -> None:
        """Stop (and interrupt a start in progress); the server's process group is reaped."""
        self._config(name)
        await self._stop(name)

    async def _stop(self, name: str) -> None:
        entry = self._entries.get(name)
        if entry is None:
            return
        self._cancel_restart(entry)
        entry.auth_error = None
        entry.kept = None
        slot = entry.slot
        if slot is not None:
            running = slot.state.status in ("starting", "connected")
            await slot.close()  # interrupts a start holding the lock; it publishes ``cancelled``
            if running:
                log.info("server_stopped", server=name, owner="management")
        async with entry.lock:
            if entry.slot is slot and slot is not None:
                entry.slot = None
                await slot.close()
            entry.attempts = 0
            self._forget_kept(name)

    async def forget(self, name: str) -> None:
        """The server is being deleted: stop it and drop what is known about it."""
        await self._stop(name)
        self._entries.pop(name, None)
        self._forget_kept(name)

    async def config_changed(self, name: str) -> None:
        """A stored config changed: a running slot is restarted with the new config (or stopped)."""
        entry = self._entries.get(name)
        if entry is None or entry.slot is None:
            return
        config = self._snapshot().get(name)
        was_running = entry.slot.state.status in ("starting", "connected")
        if config is not None and self._is_live(entry, config):
            return
        await self._stop(name)
        if config is not None and config.enabled and was_running and not self._closed:
            self._spawn_start(name)

    async def credentials_changed(self, name: str) -> None:
        """New OAuth tokens: a server that was started (or failed for want of a login) reconnects with them, and
        this returns once it has (or failed again), so a login is announced only with its token in effect."""
        entry = self._entries.get(name)
        if entry is None or self._closed:
            return
        if entry.auth_error is not None or entry.slot is not None:
            await self._stop(name)
            await self._start_quietly(name, True)

    async def start_enabled(self, only: Collection[str] | None = None) -> None:
        """Start every enabled server (of ``only``, when given) in parallel (daemon start); failures are
        published, not raised."""
        names = [n for n, config in self._snapshot().items() if config.enabled and (only is None or n in only)]
        async with anyio.create_task_group() as tg:
            for name in names:
                tg.start_soon(self._start_quietly, name, True)

    async def start_created(self, name: str) -> None:
        """A server just created (or installed) and enabled starts, unless a start or stop asked for meanwhile came
        first (it is not started twice); a failure is published, not raised."""
        entry = self._entries.get(name)
        if entry is None or self._closed:
            return  # deleted meanwhile
        try:
            async with entry.lock:
                config = self._snapshot().get(name)
                if config is None or not config.enabled or entry.slot is not None or entry.auth_error is not None:
                    return
                await self._start_locked(name, entry, config)
        except AppError as exc:
            log.debug("server_start_failed", server=name, reason=exc.reason)
        finally:
            if entry.slot is None:
                entry.starting = False

    async def _start_quietly(self, name: str, cancel_restart: bool) -> None:
        try:
            await self._start(name, cancel_restart=cancel_restart)
        except AppError as exc:
            log.debug("server_start_failed", server=name, reason=exc.reason)
        finally:
            entry = self._entries.get(name)
            if entry is not None and entry.slot is None:
                entry.starting = False  # a start that never reached a slot (a server deleted meanwhile)

    def _spawn_start(self, name: str) -> None:
        entry = self._entry(name)
        self._cancel_restart(entry)
        entry.restart = self._spawner.spawn(self._start_quietly, name, False, name=f"mcp-start:{name}")

    # ---------------------------------------------------------------- restart

    def _lost(self, slot: SessionSlot) -> None:
        """A connected session was lost (a crash, a dead HTTP server, an answer it could not take): restart it with
        exponential backoff and jitter, as for a killed process; a start that fails again waits longer."""
        entry = self._entries.get(slot.name)
        if self._closed or entry is None or entry.slot is not slot:
            return
        error = slot.state.last_error
        if error is None or needs_login(error.reason):
            return  # a login is the user's: no restart loop (the row says authenticationRequired)
        if entry.connected_at is not None and anyio.current_time() - entry.connected_at >= STABLE_AFTER_S:
            entry.attempts = 0
        self._cancel_restart(entry)
        entry.restart = self._spawner.spawn(self._restart_loop, slot.name, entry, name=f"mcp-restart:{slot.name}")

    async def _restart_loop(self, name: str, entry: ManagedServer) -> None:
        while not self._closed:
            delay = min(BACKOFF_MAX_S, BACKOFF_INITIAL_S * 2**entry.attempts) * random.uniform(0.5, 1.0)
            entry.attempts += 1
            log.info("server_restart_scheduled", server=name, attempt=entry.attempts, backoff_s=round(delay, 3))
            await anyio.sleep(delay)
            config = self._snapshot().get(name)
            if config is None or not config.enabled:
                return
            async with entry.lock:
                try:
                    await self._start_locked(name, entry, config)
                    return
                except AppError as exc:
                    log.info("server_restart_failed", server=name, reason=exc.reason, attempt=entry.attempts)

    def _cancel_restart(self, entry: ManagedServer) -> None:
        handle, entry.restart = entry.restart, None
        if handle is not None:
            handle.cancel()

    async def aclose(self) -> None:
        """Close every slot, cancel every restart and reap every child."""
        self._closed = True
        for entry in self._entries.values():
            self._cancel_restart(entry)
        async with anyio.create_task_group() as tg:
            for name in list(self._entries):
                tg.start_soon(self._stop, name)
