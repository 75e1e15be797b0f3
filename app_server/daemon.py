"""The daemon-wide state every connection shares: data dir, store, event bus, the MCP owners, the threads, the
first answer. Start-up builds one ``Daemon`` and serves connections with it; handlers reach it through
``RequestContext``. It owns the task group its background work runs in (logins, MCP sessions, autostart), so that
work ends with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

import anyio

from app_server.events import EventBus
from app_server.process.first_answer import FirstAnswer
from app_server.process.shutdown import CLOSE_S
from app_server.wire.connection import ClientConnection, next_server_request_id
from protocol.jsonrpc import AppError

AUTOSTART_SETTLE_S = 2.0
"""How long start-up's remaining loading waits for autostart's sessions: a server still starting by then is waiting
on itself (a slow command, a cold package cache), and the collector stays paused until that loading is done."""

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from app_server.threads.registry import ThreadRegistry
    from app_server.wire.trace import Trace
    from mcp_runtime import (
        ConfigStore,
        ElicitationChannel,
        Installs,
        McpClientManager,
        McpThreadRuntime,
        OAuthLogins,
        RuntimeSettings,
        Spawner,
        StoredServer,
    )
    from protocol.base import WireModel
    from protocol.config import McpServerConfig


class Daemon:
    """Daemon-wide state, built once at start-up and entered (``async with``) for as long as the daemon serves.

    The store, the management owner and the thread registry are built on first use: ``initialize`` needs none of
    them, and the management owner imports the MCP SDK."""

    def __init__(
        self,
        *,
        data_dir: Path,
        env: Mapping[str, str],
        home: Path,
        settings: RuntimeSettings,
        trace: Trace | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.env = env
        self.settings = settings
        """What the command line decided for the runtime (the deployment's policy), handed to every owner."""
        self.home = home
        self.trace = trace
        """``--trace``: where every message in and out is recorded (redacted), if anywhere."""
        self.bus = EventBus()
        self.first_answer = FirstAnswer()
        """What start-up's loading and autostart wait for before competing with the host's first answer."""
        self._tasks: TaskGroup | None = None
        self._spawner: Spawner | None = None
        self._store: ConfigStore | None = None
        self._installs: Installs | None = None
        self._manager: McpClientManager | None = None
        self._threads: ThreadRegistry | None = None
        self._logins: OAuthLogins | None = None
        self._logins_lock = anyio.Lock()
        self._initialized = False
        self._autostart: list[str] = []
        """The servers the first initialized client's store had enabled, being started in the background."""
        self._autostart_loaded = anyio.Event()
        self._autostart_settled = anyio.Event()
        self._closed: anyio.Event | None = None

    async def __aenter__(self) -> Self:
        from mcp_runtime import Spawner

        self._tasks = anyio.create_task_group()
        await self._tasks.__aenter__()
        self._spawner = Spawner(self._tasks)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool | None:
        """Close every MCP connection (shielded: it also runs when serving was cancelled), then end the background
        work."""
        assert self._tasks is not None
        try:
            with anyio.CancelScope(shield=True):
                await self.aclose()
        finally:
            self._tasks.cancel_scope.cancel()
        return await self._tasks.__aexit__(kind, error, trace)

    @property
    def spawner(self) -> Spawner:
        """Where the MCP owners start their background work: the daemon's own task group."""
        if self._spawner is None:
            raise RuntimeError("the daemon is not serving (enter it with `async with`)")
        return self._spawner

    @property
    def store(self) -> ConfigStore:
        """The server store (it is not needed to answer ``initialize``)."""
        if self._store is None:
            from mcp_runtime import ConfigStore

            self._store = ConfigStore(self.data_dir)
        return self._store

    @property
    def installs(self) -> Installs:
        """Registry search and install, bundles (SPEC §15), against ``--registry-url``."""
        if self._installs is None:
            from mcp_runtime import Installs

            self._installs = Installs(self.settings.policy.registry_url or "", self.data_dir)
        return self._installs

    @property
    def manager(self) -> McpClientManager:
        """The app-scoped management owner (it imports the MCP SDK)."""
        if self._manager is None:
            from mcp_runtime import McpClientManager

            self._manager = McpClientManager(
                self._configs,
                self.publish,
                self.env,
                self.data_dir,
                spawner=self.spawner,
                settings=self.settings,
                starting=self._autostart,
            )
        return self._manager

    @property
    def threads(self) -> ThreadRegistry:
        """The canonical thread registry (threads load from the data dir when first referenced)."""
        if self._threads is None:
            from app_server.threads.registry import ThreadRegistry
            from mcp_runtime import stored_secrets, use_app_secrets

            use_app_secrets(stored_secrets(self.data_dir))  # a thread record's "***": the app's values now
            self._threads = ThreadRegistry(
                self.data_dir,
                configs=self._configs,
                sink=self.publish,
                env=self.env,
                bus=self.bus,
                spawner=self.spawner,
                settings=self.settings,
            )
        return self._threads

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
            self._logins = None
            opened.set()

    def elicitation_channel(self, connection: ClientConnection) -> ElicitationChannel:
        """The channel through which a thread runtime asks ``connection`` (and only it) a server's elicitations;
        it holds nothing but the connection, so it goes with it."""
        from mcp_runtime import ElicitationChannel

        return ElicitationChannel(connection, next_server_request_id)

    def thread_runtime(self, thread_id: str | None) -> McpThreadRuntime:
        """The runtime of a canonical thread (``threadRequired`` / ``unknownThread`` / ``threadArchived``)."""
        return self.threads.runtime(thread_id)

    def publish(self, method: str, params: WireModel) -> None:
        self.bus.publish(method, params)

    def _configs(self) -> dict[str, McpServerConfig]:
        return {server.name: server.config for server in self.store.list()}

    def host_renders_views(self) -> None:
        """A client said it renders MCP Apps views: every MCP connection opened from now on declares the
        extension (one opened before keeps what it declared)."""
        from mcp_runtime import declare_mcp_apps

        declare_mcp_apps()

    def client_initialized(self) -> None:
        """The first initialized client: the servers enabled in the store start in their management connections,
        in the background (no answer waits for them); their rows say ``starting`` from now on."""
        if self._initialized:
            return
        self._initialized = True
        from mcp_runtime import KeptLaunches, secret_store_info

        KeptLaunches.initialized()  # the kept launches start now if start-up's reader did not see initialized

        if secret_store_info()["kind"] == "keychain":
            self.spawner.spawn(self._move_secrets_in, name="secrets-move-in")
        try:
            enabled = [server for server in self.store.list() if server.config.enabled and _admitted(server)]
        except AppError:  # a store that cannot be read starts nothing; every store request reports why
            enabled = []
        if not enabled:
            self._autostart_loaded.set()
            self._autostart_settled.set()
            from mcp_runtime import discard_kept

            self.spawner.spawn(discard_kept, name="kept-launches-discard")
            return
        self._autostart = [server.name for server in enabled]
        if self._manager is not None:
            self._manager.expect_starts(self._autostart)
        configs = {server.name: server.config for server in enabled}
        self.spawner.spawn(self._start_enabled, configs, (self.store.path.name, self.store.digest), name="autostart")

    async def _start_enabled(self, configs: dict[str, McpServerConfig], store: tuple[str, str | None]) -> None:
        """Autostart: the stdio servers' children at once (they need no SDK); once the host has its first answer,
        what a session needs (the SDK, the management owner) loaded off the loop, then every session at once,
        attaching to its child (a command is looked up on the login shell's ``PATH`` kept from the last launch);
        once they are done, this launch's read of the login shell, which no longer competes with them."""
        from mcp_runtime import children_started, load_owners, refresh_login_path

        async with children_started(configs, self.env, self.settings.policy, store):
            try:
                await self.first_answer.wait()  # the host's first list needs the machine more than the SDK's import
                await load_owners()
            finally:
                self._autostart_loaded.set()
            try:
                await self.manager.start_enabled(list(configs))
            finally:
                self._autostart_settled.set()
        if any(config.type == "stdio" for config in configs.values()):
            await refresh_login_path(self.settings.policy)

    def server_created(self, name: str, config: McpServerConfig) -> None:
        """A server was created (or installed): an enabled one starts in its management connection in the
        background, as at launch, its row ``starting`` from now on (a server stored before the first client is
        initialized is started by autostart)."""
        if not config.enabled or not self._initialized:
            return
        if self._manager is not None:
            self._manager.expect_starts([name])
        else:
            self._autostart.append(name)  # the manager, once built, starts with this row ``starting``
        self.spawner.spawn(self._start_created, name, name=f"mcp-start:{name}")

    async def _start_created(self, name: str) -> None:
        from mcp_runtime import load_owners

        await self.runtime_loaded()
        await load_owners()
        await self.manager.start_created(name)

    async def _move_secrets_in(self) -> None:
        """With the OS keychain, secrets a file still holds move into it, once the host has its first answer."""
        await self.first_answer.wait()
        from mcp_runtime import move_secrets_in

        await anyio.to_thread.run_sync(move_secrets_in, self.store, self.data_dir)

    async def runtime_loaded(self) -> None:
        """Until autostart has loaded what its starts need; at once when no autostart is under way."""
        if self._initialized:
            await self._autostart_loaded.wait()

    @property
    def autostarting(self) -> bool:
        """Whether the first initialized client's store had servers to start (the SDK is loaded for them)."""
        return bool(self._autostart)

    async def autostart_settled(self) -> None:
        """Until autostart's sessions are ready or failed, or have had ``AUTOSTART_SETTLE_S``: what start-up loads
        after them (a thread's owner, the handler modules) would take the one interpreter from their handshakes.
        At once when no autostart is under way."""
        await self.runtime_loaded()
        if self._initialized:
            with anyio.move_on_after(AUTOSTART_SETTLE_S):
                await self._autostart_settled.wait()

    async def config_changed(self, name: str) -> None:
        """A stored config changed: a running management connection is restarted with the new one."""
        if self._manager is not None:
            await self._manager.config_changed(name)

    async def forget_server(self, name: str) -> None:
        """A server is being deleted: its management connection stops (a start in progress is cancelled)."""
        if self._manager is not None:
            await self._manager.forget(name)
        if self._logins is not None:
            await self._logins.cancel(name)
        from mcp_runtime import CredentialStore

        await anyio.to_thread.run_sync(CredentialStore(self.data_dir).delete, name)  # with the keychain's items

    async def login_moved(self, name: str, old_url: str) -> None:
        """A server's URL changed: a login still running for the old one is cancelled and the old URL's tokens
        (with their keychain item) are removed, never left for nothing to use. A keychain that cannot remove them
        now keeps them named in the file (unused: tokens are kept per URL) and the update stands."""
        if self._logins is not None:
            await self._logins.cancel(name)
        from mcp_runtime import CredentialStore

        try:
            await anyio.to_thread.run_sync(CredentialStore(self.data_dir).delete, name, old_url)
        except AppError as exc:
            from app_server.process.logs import get_logger

            get_logger("app_server.daemon").warning("old_login_kept", server=name, reason=exc.reason)

    async def logged_in(self, name: str) -> None:
        """A login succeeded: the management connection and every thread's reconnect with the new tokens, in
        parallel; returns once they have, before the login is announced."""
        async with anyio.create_task_group() as tg:
            if self._manager is not None:
                tg.start_soon(self._manager.credentials_changed, name)
            if self._threads is not None:
                tg.start_soon(self._threads.credentials_changed, name)

    async def aclose(self) -> None:
        """Close every MCP connection (threads first, then management); process groups still alive after
        ``CLOSE_S`` are killed, so the (shielded) per-server stop sequences end at once instead of waiting out their
        own graces. A second call waits for the first."""
        if self._closed is not None:
            await self._closed.wait()
            return
        self._closed = anyio.Event()
        try:
            async with anyio.create_task_group() as closing:
                closing.start_soon(_kill_children_after, CLOSE_S)
                if self._threads is not None:
                    await self._threads.aclose()
                if self._manager is not None:
                    await self._manager.aclose()
                closing.cancel_scope.cancel()
        finally:
            self._closed.set()


def _admitted(server: StoredServer) -> bool:
    """Whether the administrator's policy lets this stored server start (a denied one never does)."""
    from mcp_runtime import admin_policy

    return admin_policy().denial(server.config, server.source) is None


async def _kill_children_after(delay: float) -> None:
    await anyio.sleep(delay)
    from mcp_runtime import kill_live_groups

    if kill_live_groups():
        from app_server.process.logs import get_logger

        get_logger("app_server.daemon").warning("killed_children_after_close_timeout")
