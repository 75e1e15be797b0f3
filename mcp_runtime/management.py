"""``McpClientManager``: the app-scoped, management-only owner of MCP connections (SPEC §3).

It serves the GUI's reads (status, catalogs, prompt get, resource read, subscriptions) and start/stop. It
declares no elicitation, sampling or roots, declines any elicitation, and never executes a tool. Status reads
answer from cached state at once; start/stop are serialized per server name, and a stop or delete interrupts a
start in progress (``cancelled``).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import structlog

from mcp_runtime import oauth
from mcp_runtime.catalog import CatalogCache
from mcp_runtime.config import normalized
from mcp_runtime.connection import McpConnection, load_sdk, server_status
from mcp_runtime.events import EventSink
from protocol.config import HttpServerConfig, McpServerConfig
from protocol.jsonrpc import AppError
from protocol.server import AuthStatus, ErrorInfo, ServerStatus, StartupState, StartupStatusUpdated

if TYPE_CHECKING:
    import httpx2

log = structlog.get_logger("mcp_runtime.management")

BACKOFF_INITIAL_S = 1.0
BACKOFF_MAX_S = 60.0
STABLE_AFTER_S = BACKOFF_MAX_S
"""A connection that stayed up this long resets the backoff."""


@dataclass
class _Entry:
    """Everything the manager knows about one server name."""

    lock: anyio.Lock = field(default_factory=anyio.Lock)
    connection: McpConnection | None = None
    config: McpServerConfig | None = None
    restart: asyncio.Task[None] | None = None
    auth_error: AppError | None = None
    attempts: int = 0
    connected_at: float | None = None


def connection_auth(name: str, config: McpServerConfig, data_dir: Path) -> httpx2.Auth | None:
    """The OAuth provider for a connection, or None; an OAuth server not logged in fails closed here.

    Starting it would only learn the same from a 401 a round trip later, and a start never begins a login.
    """
    if not isinstance(config, HttpServerConfig):
        return None
    if config.oauth is not None and oauth.auth_status(name, config.url, config, data_dir) == "notLoggedIn":
        raise AppError("authRequired", f"server {name} needs an OAuth login (mcpServer/oauth/login)", server=name)
    return oauth.oauth_auth(name, config.url, config, data_dir)


def auth_status(name: str, config: McpServerConfig, data_dir: Path) -> AuthStatus:
    if not isinstance(config, HttpServerConfig):
        return "unsupported"
    return oauth.auth_status(name, config.url, config, data_dir)


class McpClientManager:
    """Management connections, one per started server name, built from the current store snapshot."""

    def __init__(
        self,
        store_snapshot: Callable[[], dict[str, McpServerConfig]],
        sink: EventSink,
        env: Mapping[str, str],
        data_dir: Path,
    ) -> None:
        self._data_dir = data_dir
        self._snapshot = store_snapshot
        self._sink = sink
        self._env = env
        self._entries: dict[str, _Entry] = {}
        self._closed = False
        self.catalog = CatalogCache()

    # ----------------------------------------------------------------- reads

    def _config(self, name: str) -> McpServerConfig:
        config = self._snapshot().get(name)
        if config is None:
            raise AppError("unknownServer", f"no server named {name}", server=name)
        return config

    def _status(self, name: str, config: McpServerConfig) -> ServerStatus:
        entry = self._entries.get(name)
        connection = entry.connection if entry is not None else None
        if connection is None and entry is not None and entry.auth_error is not None:
            error = entry.auth_error
            return ServerStatus(
                name=name,
                runtime_status="authenticationRequired",
                auth_status=auth_status(name, config, self._data_dir),
                last_error=ErrorInfo(reason=error.reason, message=error.message),
            )
        if connection is None:
            return ServerStatus(
                name=name,
                runtime_status="notStarted" if config.enabled else "disabled",
                auth_status=auth_status(name, config, self._data_dir),
            )
        state = connection.state
        runtime = "disabled" if state.status == "notStarted" and not config.enabled else state.status
        return server_status(name, state, auth_status(name, config, self._data_dir), runtime)

    def status(self, name: str) -> ServerStatus:
        """From cached state only: never waits on a server that is starting."""
        return self._status(name, self._config(name))

    def statuses(self) -> list[ServerStatus]:
        return [self._status(name, config) for name, config in sorted(self._snapshot().items())]

    def connection(self, name: str) -> McpConnection:
        """The live connection for the read methods."""
        self._config(name)
        entry = self._entries.get(name)
        if entry is None or entry.connection is None or not entry.connection.connected:
            raise AppError("notRunning", f"server {name} is not connected", server=name)
        return entry.connection

    def tool_filters(self) -> tuple[list[str] | None, list[str] | None]:
        """The app scope has no thread filters (servers' own enabledTools/disabledTools still apply)."""
        return None, None

    def connections(self) -> dict[str, McpConnection]:
        """Every connected server's connection (for the catalog built on top)."""
        return {
            name: entry.connection
            for name, entry in self._entries.items()
            if entry.connection is not None and entry.connection.connected
        }

    # -------------------------------------------------------------- lifecycle

    def _publish(self, name: str, status: StartupState, error: AppError | None = None) -> None:
        self._sink(
            "mcpServer/startupStatus/updated",
            StartupStatusUpdated(
                thread_id=None,
                name=name,
                status=status,
                error=ErrorInfo(reason=error.reason, message=error.message) if error is not None else None,
                failure_reason="reauthenticationRequired"
                if error is not None and error.reason in ("authRequired", "reauthenticationRequired")
                else None,
            ),
        )

    def _entry(self, name: str) -> _Entry:
        return self._entries.setdefault(name, _Entry())

    async def start(self, name: str) -> ServerStatus:
        """Connect (or return the live connection's status); publishes starting → ready|failed|cancelled."""
        if self._closed:
            raise AppError("notRunning", "the daemon is shutting down")
        config = self._config(name)
        entry = self._entry(name)
        async with entry.lock:
            self._cancel_restart(entry)
            return await self._start_locked(name, entry, config)

    def _is_live(self, entry: _Entry, config: McpServerConfig) -> bool:
        connection = entry.connection
        return (
            connection is not None
            and connection.connected
            and entry.config is not None
            and normalized(entry.config) == normalized(config)
        )

    async def _start_locked(self, name: str, entry: _Entry, config: McpServerConfig) -> ServerStatus:
        if self._is_live(entry, config):
            return self._status(name, config)
        carried: frozenset[str] = frozenset()
        if entry.connection is not None:
            old, entry.connection = entry.connection, None
            carried = old.subscriptions
            await old.close()
        await load_sdk()
        self._publish(name, "starting")
        try:
            auth = connection_auth(name, config, self._data_dir)
        except AppError as exc:
            entry.auth_error = exc
            self._publish(name, "failed", exc)
            raise
        entry.auth_error = None
        connection = McpConnection(
            name,
            config,
            env=self._env,
            sink=self._sink,
            on_lost=self._lost,
            subscriptions=carried,
            auth=auth,
        )
        entry.connection = connection
        entry.config = config
        try:
            await connection.start()
        except AppError as exc:
            if exc.reason == "cancelled":
                self._publish(name, "cancelled")
            else:
                self._publish(name, "failed", exc)
            raise
        except BaseException:
            self._publish(name, "cancelled")
            raise
        entry.connected_at = anyio.current_time()
        self._publish(name, "ready")
        return self._status(name, config)

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
        connection = entry.connection
        if connection is not None:
            await connection.close()  # interrupts a start holding the lock; it publishes ``cancelled``
        async with entry.lock:
            if entry.connection is connection and connection is not None:
                entry.connection = None
                await connection.close()
            entry.attempts = 0

    async def forget(self, name: str) -> None:
        """The server is being deleted: stop it and drop what is known about it."""
        await self._stop(name)
        self._entries.pop(name, None)

    async def config_changed(self, name: str) -> None:
        """A stored config changed: a running connection is restarted with the new config (or stopped)."""
        entry = self._entries.get(name)
        if entry is None or entry.connection is None:
            return
        config = self._snapshot().get(name)
        was_running = entry.connection.state.status in ("starting", "connected")
        if config is not None and self._is_live(entry, config):
            return
        await self._stop(name)
        if config is not None and config.enabled and was_running and not self._closed:
            self._spawn_start(name)

    async def credentials_changed(self, name: str) -> None:
        """New OAuth tokens: a server that was started (or failed for want of a login) reconnects with them."""
        entry = self._entries.get(name)
        if entry is None or self._closed:
            return
        if entry.auth_error is not None or entry.connection is not None:
            await self._stop(name)
            self._spawn_start(name)

    async def start_enabled(self) -> None:
        """Start every enabled server in parallel (daemon start); failures are published, not raised."""
        names = [name for name, config in self._snapshot().items() if config.enabled]
        async with anyio.create_task_group() as tg:
            for name in names:
                tg.start_soon(self._start_quietly, name)

    async def _start_quietly(self, name: str) -> None:
        try:
            await self.start(name)
        except AppError as exc:
            log.info("server failed to start", server=name, reason=exc.reason)

    def _spawn_start(self, name: str) -> None:
        entry = self._entry(name)
        entry.restart = asyncio.get_running_loop().create_task(self._start_quietly(name))

    # ---------------------------------------------------------------- restart

    def _lost(self, connection: McpConnection) -> None:
        """A connected server crashed: restart it with exponential backoff and jitter."""
        entry = self._entries.get(connection.name)
        if self._closed or entry is None or entry.connection is not connection:
            return
        error = connection.state.last_error
        if error is None or error.reason != "connectionLost":
            return  # an invalid catalog or an auth failure would fail again: no restart loop
        if entry.connected_at is not None and anyio.current_time() - entry.connected_at >= STABLE_AFTER_S:
            entry.attempts = 0
        entry.restart = asyncio.get_running_loop().create_task(self._restart_loop(connection.name, entry))

    async def _restart_loop(self, name: str, entry: _Entry) -> None:
        while not self._closed:
            delay = min(BACKOFF_MAX_S, BACKOFF_INITIAL_S * 2**entry.attempts)
            entry.attempts += 1
            await anyio.sleep(delay * random.uniform(0.5, 1.0))
            config = self._snapshot().get(name)
            if config is None or not config.enabled:
                return
            async with entry.lock:
                try:
                    await self._start_locked(name, entry, config)
                    return
                except AppError as exc:
                    log.info("restart failed", server=name, reason=exc.reason, attempt=entry.attempts)

    def _cancel_restart(self, entry: _Entry) -> None:
        task = entry.restart
        entry.restart = None
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()

    async def aclose(self) -> None:
        """Close every connection and reap every child."""
        self._closed = True
        for entry in self._entries.values():
            self._cancel_restart(entry)
        async with anyio.create_task_group() as tg:
            for name in list(self._entries):
                tg.start_soon(self._stop, name)
