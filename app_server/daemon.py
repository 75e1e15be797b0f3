"""Daemon-wide state shared by every connection: data dir, store, event bus and the MCP owners."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup

from app_server.connection import ClientConnection
from app_server.events import EventBus
from protocol.jsonrpc import AppError, RequestId

if TYPE_CHECKING:
    from app_server.threads import ThreadRegistry
    from app_server.trace import Trace
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
    first_answer: anyio.Event = field(default_factory=anyio.Event)
    """Set once a request has been answered (start-up's loading waits for it)."""
    loaded: anyio.Event = field(default_factory=anyio.Event)
    """Set once start-up has loaded every handler (and the MCP SDK when servers are autostarted)."""
    trace: Trace | None = None
    """``--trace``: where every message in and out is recorded (redacted), if anywhere."""
    autostart: list[str] = field(default_factory=list)
    """The servers enabled when the first client was initialized, started once start-up has loaded."""
    _autostarted: bool = False
    _logins: OAuthLogins | None = None
    _logins_lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def logins(self) -> OAuthLogins:
        """The OAuth login coordinator; it runs in a daemon-owned task so a login outlives its request."""
        async with self._logins_lock:
            if self._logins is None:
                opened = anyio.Event()
                self.spawner.spawn(self._run_logins, opened, name="oauth-logins")
                await opened.wait()
            if self._logins is None:
                raise AppError("internal", "the login coordinator could not start")
        return self._logins

    async def _run_logins(self, opened: anyio.Event) -> None:
        from mcp_runtime import OAuthLogins

        try:
            async with OAuthLogins(self.data_dir) as logins:
                self._logins = logins
                opened.set()
                await anyio.sleep_forever()
        finally:
            opened.set()

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

    def client_initialized(self) -> None:
        """The first initialized client: the servers enabled in the store now start in their management
        connections once start-up has loaded (``app_server.startup``), in the background: no answer waits."""
        if self._autostarted or self.tasks is None:
            return
        self._autostarted = True
        try:
            enabled = [server for server in self.store.list() if server.config.enabled]
        except AppError:  # a store that cannot be read starts nothing; every store request reports why
            return
        self.autostart = [server.name for server in enabled]
        from app_server import startup

        if any(server.config.type == "stdio" for server in enabled):
            self.spawner.spawn(startup.read_login_path, self, name="login-path")
        if self.autostart:
            self.spawner.spawn(startup.autostart, self, self.autostart, name="autostart")

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
        """A login succeeded: the management connection and every thread's reconnect with the new tokens, in
        parallel; returns once they have, before the login is announced."""
        async with anyio.create_task_group() as tg:
            if "manager" in self.__dict__:
                tg.start_soon(self.manager.credentials_changed, name)
            if "threads" in self.__dict__:
                tg.start_soon(self.threads.credentials_changed, name)

    async def aclose(self) -> None:
        if "threads" in self.__dict__:
            await self.threads.aclose()
        if "manager" in self.__dict__:
            await self.manager.aclose()


@dataclass(frozen=True)
class RequestContext:
    daemon: Daemon
    connection: ClientConnection
    request_id: RequestId
