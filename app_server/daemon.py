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
from protocol.jsonrpc import RequestId

if TYPE_CHECKING:
    from mcp_runtime.management import McpClientManager
    from mcp_runtime.store import ConfigStore
    from mcp_runtime.thread_runtime import McpThreadRuntime
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

    @cached_property
    def store(self) -> ConfigStore:
        """The server store, opened on first use (it is not needed to answer ``initialize``)."""
        from mcp_runtime.store import ConfigStore

        return ConfigStore(self.data_dir)

    @cached_property
    def manager(self) -> McpClientManager:
        """The app-scoped management owner, built on first use (it imports the MCP SDK)."""
        from mcp_runtime.management import McpClientManager

        return McpClientManager(self._configs, self.publish, self.env)

    def thread_runtime(self, thread_id: str, connection: ClientConnection) -> McpThreadRuntime:
        """The runtime of a canonical thread (``threadRequired`` / ``unknownThread`` / ``threadArchived``)."""
        return self.threads.runtime(thread_id, connection)

    def publish(self, method: str, params: WireModel) -> None:
        self.bus.publish(method, params)

    def _configs(self) -> dict[str, McpServerConfig]:
        return {server.name: server.config for server in self.store.list()}

    def client_initialized(self) -> None:
        """The first initialized client: start the enabled servers' management connections in the background."""
        if self._autostarted or self.tasks is None:
            return
        self._autostarted = True
        self.tasks.start_soon(self._start_enabled)

    async def _start_enabled(self) -> None:
        await anyio.sleep(0)
        if self.store.corruption is None and any(s.config.enabled for s in self.store.list()):
            await self.manager.start_enabled()

    async def config_changed(self, name: str) -> None:
        """A stored config changed: a running management connection is restarted with the new one."""
        if "manager" in self.__dict__:
            await self.manager.config_changed(name)

    async def forget_server(self, name: str) -> None:
        """A server is being deleted: its management connection stops (a start in progress is cancelled)."""
        if "manager" in self.__dict__:
            await self.manager.forget(name)

    async def aclose(self) -> None:
        if "manager" in self.__dict__:
            await self.manager.aclose()


@dataclass(frozen=True)
class RequestContext:
    daemon: Daemon
    connection: ClientConnection
    request_id: RequestId
