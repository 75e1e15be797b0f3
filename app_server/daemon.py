"""Daemon-wide state shared by every connection: data dir, store, event bus and the MCP owners."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup, TaskStatus

from app_server.connection import ClientConnection
from app_server.events import EventBus
from protocol.jsonrpc import RequestId

if TYPE_CHECKING:
    from app_server.threads import ThreadRegistry
    from mcp_runtime import ConfigStore, McpClientManager, McpThreadRuntime, OAuthLogins, Spawner
    from protocol.base import WireModel
    from protocol.config import McpServerConfig


@dataclass
class Daemon:
    data_dir: Path
    env: Mapping[str, str]
    home: Path
    bus: EventBus = field(default_factory=EventBus)
    tasks: TaskGroup | None = None
    _autostarted: bool = False
    _logins: OAuthLogins | None = None
    _logins_lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def logins(self) -> OAuthLogins:
        """The OAuth login coordinator; it runs in a daemon-owned task so a login outlives its request."""
        async with self._logins_lock:
            if self._logins is None:
                assert self.tasks is not None, "the daemon is not serving"
                self._logins = await self.tasks.start(self._run_logins)
        return self._logins

    async def _run_logins(self, *, task_status: TaskStatus[OAuthLogins]) -> None:
        from mcp_runtime import OAuthLogins

        async with OAuthLogins(self.data_dir) as logins:
            task_status.started(logins)
            await anyio.sleep_forever()

    @cached_property
    def store(self) -> ConfigStore:
        """The server store, opened on first use (it is not needed to answer ``initialize``)."""
        from mcp_runtime import ConfigStore

        return ConfigStore(self.data_dir)

    @cached_property
    def manager(self) -> McpClientManager:
        """The app-scoped management owner, built on first use (it imports the MCP SDK)."""
        from mcp_runtime import McpClientManager

        return McpClientManager(self._configs, self.publish, self.env, self.data_dir, spawner=self.spawner)

    @cached_property
    def spawner(self) -> Spawner:
        """Where the MCP owners start their background work: the daemon's own task group."""
        from mcp_runtime import Spawner

        assert self.tasks is not None, "the daemon is not serving"
        return Spawner(self.tasks)

    @cached_property
    def threads(self) -> ThreadRegistry:
        """The canonical thread registry, built on first use (threads load from the data dir lazily)."""
        from app_server.threads import ThreadRegistry

        return ThreadRegistry(
            self.data_dir, configs=self._configs, sink=self.publish, env=self.env, bus=self.bus, spawner=self.spawner
        )

    def thread_runtime(self, thread_id: str, connection: ClientConnection) -> McpThreadRuntime:
        """The runtime of a canonical thread (``threadRequired`` / ``unknownThread`` / ``threadArchived``)."""
        return self.threads.runtime(thread_id, connection)

    def publish(self, method: str, params: WireModel) -> None:
        self.bus.publish(method, params)

    def _configs(self) -> dict[str, McpServerConfig]:
        return {server.name: server.config for server in self.store.list()}

    def client_initialized(self, prepare: Callable[[], None]) -> None:
        """The first initialized client: load what requests need (``prepare``, in a worker thread), then start
        the servers enabled now in their management connections, all in the background: no answer waits."""
        if self._autostarted or self.tasks is None:
            return
        self._autostarted = True
        from app_server.handshake import stored_enabled_names
        from mcp_runtime import MAX_CONFIG_BYTES

        enabled = stored_enabled_names(self.data_dir, MAX_CONFIG_BYTES)
        self.tasks.start_soon(self._start_enabled, prepare, enabled)

    async def _start_enabled(self, prepare: Callable[[], None], enabled: frozenset[str]) -> None:
        from app_server.logs import configure

        await anyio.to_thread.run_sync(_warm, prepare)
        configure()
        if enabled and self.store.corruption is None:
            await anyio.to_thread.run_sync(_warm, _import_manager)
            await self.manager.start_enabled(enabled)

    async def config_changed(self, name: str) -> None:
        """A stored config changed: a running management connection is restarted with the new one."""
        if "manager" in self.__dict__:
            await self.manager.config_changed(name)

    async def forget_server(self, name: str) -> None:
        """A server is being deleted: its management connection stops (a start in progress is cancelled)."""
        if "manager" in self.__dict__:
            await self.manager.forget(name)
        if self._logins is not None:
            await self._logins.cancel(name)
        from mcp_runtime import CredentialStore

        CredentialStore(self.data_dir).delete(name)

    async def logged_in(self, name: str) -> None:
        """A login succeeded: a management connection waiting on it starts again with the new tokens."""
        if "manager" in self.__dict__:
            await self.manager.credentials_changed(name)
        if "threads" in self.__dict__:
            await self.threads.credentials_changed(name)

    async def aclose(self) -> None:
        if "threads" in self.__dict__:
            await self.threads.aclose()
        if "manager" in self.__dict__:
            await self.manager.aclose()


WARM_SWITCH_INTERVAL_S = 0.0005
"""GIL switch interval while a worker thread imports: the loop thread gets the GIL back within about this long."""


def _warm(load: Callable[[], None]) -> None:
    """Run imports in this worker thread; the event loop keeps answering meanwhile (it waits at most the
    lowered switch interval for the GIL the importing thread holds)."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(min(previous, WARM_SWITCH_INTERVAL_S))
    try:
        load()
    finally:
        sys.setswitchinterval(previous)


def _import_manager() -> None:
    from mcp_runtime import McpClientManager  # noqa: F401  (imports the MCP SDK)


@dataclass(frozen=True)
class RequestContext:
    daemon: Daemon
    connection: ClientConnection
    request_id: RequestId
