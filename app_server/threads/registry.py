"""Canonical threads: the registry, ``ExecutionBackend`` and ``AgentRuntimeState`` (SPEC §3, §4).

The only path to a tool execution is ``threadId → CanonicalThread → ExecutionBackend → AgentRuntimeState →
McpThreadRuntime``. The owner is never guessed: a missing/empty id is ``threadRequired``, an id with no
durable record is ``unknownThread``, an archived thread is ``threadArchived``.

A thread is durable: ``<dataDir>/threads/<id>.json`` (written atomically, mode 0600, never through a symlink)
holds its record and its resolved server set; its facts live next to it (``read_model``) and its summary in the
index ``thread/list`` pages from (``thread_index``). After a restart a thread is loaded again when it is first
referenced, and its servers connect then, in the background.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from app_server.events import EventBus
from app_server.process.logs import get_logger
from app_server.threads.facts import Facts, ReadModel
from app_server.threads.index import THREAD_ID, ThreadIndex
from app_server.wire.connection import ClientConnection
from mcp_runtime import ThreadArchive, safe_fs, utc_now
from protocol.config import McpServerConfig
from protocol.jsonrpc import AppError
from protocol.thread import ResourceReadFact, Thread, ThreadStartParams

if TYPE_CHECKING:
    from mcp_runtime import EventSink, McpThreadRuntime, RuntimeSettings, Spawner

log = get_logger("app_server.threads")

RECORD_VERSION = 1


@dataclass(frozen=True)
class ThreadRecord:
    """What is durable about a thread: identity, status, its resolved servers and its tool filters."""

    id: str
    name: str
    cwd: str | None
    created_at: str
    status: Literal["active", "archived"]
    servers: dict[str, McpServerConfig]
    allowed_tools: list[str] | None = None
    disabled_tools: list[str] | None = None

    def view(self) -> Thread:
        return Thread(
            id=self.id,
            name=self.name,
            cwd=self.cwd,
            created_at=self.created_at,
            status=self.status,
            servers=sorted(self.servers),
        )

    def encode(self) -> bytes:
        from mcp_runtime import to_wire

        document: dict[str, Any] = {
            "version": RECORD_VERSION,
            "id": self.id,
            "name": self.name,
            "cwd": self.cwd,
            "createdAt": self.created_at,
            "status": self.status,
            "mcpServers": {name: to_wire(config) for name, config in sorted(self.servers.items())},
            "allowedTools": self.allowed_tools,
            "disabledTools": self.disabled_tools,
        }
        return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()

    @classmethod
    def decode(cls, data: bytes) -> ThreadRecord:
        from mcp_runtime import parse_server_config

        raw = json.loads(data)
        if not isinstance(raw, dict) or raw.get("version") != RECORD_VERSION:
            raise ValueError("unsupported thread record")
        servers = {name: parse_server_config(name, config) for name, config in raw["mcpServers"].items()}
        status, cwd = raw["status"], raw.get("cwd")
        if status not in ("active", "archived"):
            raise ValueError("invalid thread status")
        return cls(
            id=str(raw["id"]),
            name=str(raw["name"]),
            cwd=cwd if isinstance(cwd, str) else None,
            created_at=str(raw["createdAt"]),
            status=status,
            servers=servers,
            allowed_tools=raw.get("allowedTools"),
            disabled_tools=raw.get("disabledTools"),
        )


class AgentRuntimeState:
    """The live state of one thread's agent runtime; it holds the thread's MCP runtime."""

    def __init__(self, mcp: McpThreadRuntime) -> None:
        self.mcp = mcp

    async def aclose(self) -> None:
        await self.mcp.aclose()


class ExecutionBackend:
    """Where a thread's work runs (in this process). Builds the runtime state on first use; it connects the
    thread's servers in the background."""

    def __init__(self, factory: Callable[[], McpThreadRuntime]) -> None:
        self._factory = factory
        self._state: AgentRuntimeState | None = None

    @property
    def started(self) -> bool:
        return self._state is not None

    def state(self) -> AgentRuntimeState:
        if self._state is None:
            runtime = self._factory()
            runtime.start()
            self._state = AgentRuntimeState(runtime)
        return self._state

    async def aclose(self) -> None:
        state, self._state = self._state, None
        if state is not None:
            await state.aclose()


@dataclass(eq=False)
class CanonicalThread:
    record: ThreadRecord
    backend: ExecutionBackend = field(init=False)


class ThreadRegistry:
    """Every canonical thread of this daemon (loaded lazily from the data dir)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        configs: Callable[[], Mapping[str, McpServerConfig]],
        sink: EventSink,
        env: Mapping[str, str],
        bus: EventBus,
        spawner: Spawner,
        settings: RuntimeSettings,
    ) -> None:
        self.data_dir = data_dir
        self.directory = data_dir / "threads"
        self.facts = ReadModel(data_dir)
        self.index = ThreadIndex(data_dir)
        self.context_archive = ThreadArchive(self.directory)
        self._configs = configs
        self._sink = sink
        self._env = env
        self._bus = bus
        self._spawner = spawner
        self._settings = settings
        self._threads: dict[str, CanonicalThread] = {}

    # ------------------------------------------------------------- durability

    @staticmethod
    def _relative(thread_id: str) -> str:
        return f"threads/{thread_id}.json"

    def _save(self, record: ThreadRecord) -> None:
        safe_fs.write_file(self.data_dir, self._relative(record.id), record.encode())
        self.index.put(record.view())

    def _load(self, thread_id: str) -> ThreadRecord | None:
        try:
            data = safe_fs.read_file(self.data_dir, self._relative(thread_id))
        except NotADirectoryError:
            return None
        if data is None:
            return None
        try:
            return ThreadRecord.decode(data)
        except (ValueError, KeyError, TypeError, AppError) as exc:
            log.warning("thread_record_unreadable", thread_id=thread_id, error=type(exc).__name__)
            return None

    def _canonical(self, record: ThreadRecord) -> CanonicalThread:
        thread = CanonicalThread(record)
        thread.backend = ExecutionBackend(lambda: self._build_runtime(thread))
        self._threads[record.id] = thread
        return thread

    def _build_runtime(self, thread: CanonicalThread) -> McpThreadRuntime:
        from mcp_runtime import McpThreadRuntime

        record = thread.record
        thread_id = record.id

        def record_fact(fact: ResourceReadFact) -> None:
            self.facts.append(thread_id, fact)

        return McpThreadRuntime(
            thread_id,
            record.servers,
            sink=self._sink,
            env=self._env,
            data_dir=self.data_dir,
            spawner=self._spawner,
            settings=self._settings,
            archive=self.context_archive,
            allowed_tools=record.allowed_tools,
            disabled_tools=record.disabled_tools,
            record_fact=record_fact,
        )

    # ----------------------------------------------------------------- lookup

    def get(self, thread_id: str | None) -> CanonicalThread:
        """The canonical thread for an id (never guessed): threadRequired / unknownThread."""
        if not thread_id:
            raise AppError("threadRequired", "threadId is required")
        thread = self._threads.get(thread_id)
        if thread is not None:
            return thread
        record = self._load(thread_id) if THREAD_ID.fullmatch(thread_id) else None
        if record is None:
            raise AppError("unknownThread", "no thread with this id", threadId=thread_id[:64])
        self.index.refresh(record.view())
        return self._canonical(record)

    def runtime(self, thread_id: str | None) -> McpThreadRuntime:
        """``threadId → CanonicalThread → ExecutionBackend → AgentRuntimeState → McpThreadRuntime``."""
        thread = self.get(thread_id)
        if thread.record.status == "archived":
            raise AppError("threadArchived", "the thread is archived", threadId=thread.record.id)
        return thread.backend.state().mcp

    def follow(self, thread_id: str, connection: ClientConnection) -> None:
        """``connection`` gets the thread's events from now on (a client that names a thread follows it)."""
        self._bus.subscribe(thread_id, connection)

    # ---------------------------------------------------------------- methods

    def _server_set(self, params: ThreadStartParams, inline: set[str] | None = None) -> dict[str, McpServerConfig]:
        from mcp_runtime import MAX_SERVERS, check_server, normalized, restore_redacted

        servers: dict[str, McpServerConfig] = {}
        if not params.strict_mcp_config:
            app = self._configs()
            if params.servers is not None:
                for name in params.servers:
                    if name not in app:
                        raise AppError("unknownServer", f"no server named {name}", server=name)
                names = list(dict.fromkeys(params.servers))
            else:
                names = sorted(app)
            servers = {name: app[name] for name in names if app[name].enabled}
        for name, config in (params.mcp_servers or {}).items():
            check_server(name, config)
            existing = servers.get(name)
            config = restore_redacted(config, existing, at=f"mcpServers.{name}")  # "***" keeps stored secrets
            if existing is not None and normalized(existing) != normalized(config):
                raise AppError(
                    "conflictingServerConfig",
                    f"server {name} is configured differently by the app and by mcpServers",
                    server=name,
                )
            if existing is None and config.enabled:
                servers[name] = config
                if inline is not None:
                    inline.add(name)
        if len(servers) > MAX_SERVERS:
            raise AppError("tooManyServers", f"a thread has at most {MAX_SERVERS} servers", limit=MAX_SERVERS)
        self._settings.policy.check_all(servers.items())
        return servers

    async def start(self, params: ThreadStartParams, connection: ClientConnection) -> Thread:
        import anyio

        from mcp_runtime import for_thread_record

        inline: set[str] = set()
        servers = self._server_set(params, inline)
        # off the loop: an inline server's secrets go to the secret store (a keychain may answer slowly) first
        servers = await anyio.to_thread.run_sync(for_thread_record, servers, inline)
        record = ThreadRecord(
            id=f"thr_{uuid.uuid4().hex}",
            name=params.name or "",
            cwd=params.cwd,  # no working directory unless the host names one (SPEC §4)
            created_at=utc_now(),
            status="active",
            servers=servers,
            allowed_tools=params.allowed_tools,
            disabled_tools=params.disabled_tools,
        )
        self._save(record)
        thread = self._canonical(record)
        self.follow(record.id, connection)
        thread.backend.state()  # connects in the background; thread/start returns at once
        log.info("thread_started", thread_id=record.id, servers=sorted(servers), connection=connection.label)
        return record.view()

    async def page(self, cursor: str | None, limit: int | None) -> tuple[list[Thread], str | None]:
        """One page of ``thread/list``, newest first, served from the index."""
        return await self.index.page(cursor, limit)

    def read(self, thread_id: str | None) -> tuple[Thread, Facts]:
        thread = self.get(thread_id)
        return thread.record.view(), self.facts.facts(thread.record.id)

    async def archive(self, thread_id: str | None) -> Thread:
        thread = self.get(thread_id)
        if thread.record.status != "archived":
            thread.record = replace(thread.record, status="archived")
            self._save(thread.record)
            await thread.backend.aclose()
            log.info("thread_archived", thread_id=thread.record.id)
        return thread.record.view()

    async def credentials_changed(self, name: str) -> None:
        """New OAuth tokens: every running thread runtime that uses ``name`` reconnects it, all at once."""
        import anyio

        async with anyio.create_task_group() as tg:
            for thread in list(self._threads.values()):
                if thread.backend.started and thread.record.status == "active":
                    tg.start_soon(thread.backend.state().mcp.credentials_changed, name)

    async def aclose(self) -> None:
        import anyio

        async with anyio.create_task_group() as tg:
            for thread in self._threads.values():
                tg.start_soon(thread.backend.aclose)
