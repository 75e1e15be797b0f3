"""The roof of the program: its entry, serving, and shutdown within SPEC §1's bound. Nothing imports this module;
it imports the leaves below it (``options``, ``logs``, ``memory``, ``signals``, ``shutdown``, the early reader) and
builds the daemon and its processors.

A host waits on its sidecar until ``initialize`` is answered, so the early reader (``wire.early_stdio``) answers it
on stdio from a thread while the main thread imports the daemon (the event loop, pydantic, the handlers); what it
served is handed to the processor with the bytes it did not serve. Only this module's top level runs before
``initialize`` is answered: it imports the standard library and the pydantic-free wire helpers, nothing else.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from app_server.process import memory, options, shutdown
from app_server.process.signals import StopSignals
from app_server.wire import handshake
from app_server.wire.early_stdio import SWITCH_INTERVAL_S, EarlyStdio
from protocol.constants import NAME

if TYPE_CHECKING:
    import socket

    import anyio

    from app_server.daemon import Daemon
    from app_server.wire.trace import Trace
    from mcp_runtime import RuntimeSettings, SecretStoreDecision

WINDOWS_GAPS = "the data dir's guarantees need O_NOFOLLOW and dir_fd, stdio servers need process groups"
"""What serving lacks on Windows (SPEC §10: type-checked and importable there, refused explicitly)."""


def launch() -> int:
    """The program (the ``mcp-app-server`` script and ``python -m app_server``)."""
    memory.pause_collector()
    try:
        args = options.parse(sys.argv[1:])
    except options.UsageError as refused:
        refused.report()
    if args.command is not None:
        return _subcommand(args)
    data_dir = options.data_dir(args.data_dir, os.environ)
    try:
        options.prepare_data_dir(data_dir)
    except options.DataDirUnusable as unusable:
        print(f"{NAME}: {unusable}", file=sys.stderr)
        return 2
    policy_path = options.policy_path(args.policy)
    if policy_path is not None:  # a managed deployment: its policy is read before initialize is answered
        from mcp_runtime import PolicyUnreadable, load_admin_policy, set_admin_policy

        try:
            admin = load_admin_policy(policy_path)
        except PolicyUnreadable as unreadable:
            print(f"{NAME}: {unreadable}", file=sys.stderr)
            return 2
        set_admin_policy(admin)
        handshake.describe_policy(admin.summary())
    signals = StopSignals()
    secret_store = SecretStoreChoice(args.secret_store, data_dir)
    initialized = threading.Event()
    early = EarlyStdio.begin(args, data_dir, signals, secret_store.wait, initialized)
    if early is not None:
        _keep_launches(args, data_dir, policy_path, initialized)
    return serve(args, Path(data_dir), signals, early, secret_store)


def _keep_launches(
    args: argparse.Namespace, data_dir: str, policy_path: str | None, initialized: threading.Event
) -> None:
    """The enabled stdio servers kept from the last start begin as soon as ``initialized`` is read, before the
    daemon has imported what reads its store (``kept_launch``): keyed by every setting that decides whether and
    how a server starts."""
    from mcp_runtime import KeptLaunches, launch_identity

    settings = (
        sorted(args.transports), args.stdio_sandbox, args.path_from_shell, args.allow_env, args.secret_store,
        sys.executable,
    )  # fmt: skip
    KeptLaunches.begin(Path(data_dir), launch_identity(settings, policy_path), initialized)


def _subcommand(args: argparse.Namespace) -> int:
    memory.resume_collector()
    if args.command == options.WATCH_CHILDREN:
        from mcp_runtime import watch_children

        return watch_children()
    if args.command == "generate-json-schema":
        from protocol.schema_export import write_schemas

        write_schemas(Path(args.out))
    else:
        from protocol.ts_export import write_typescript

        write_typescript(Path(args.out))
    return 0


class SecretStoreChoice:
    """``--secret-store`` decided in a thread beside start-up (its probe may ask the session bus): the ``initialize``
    answer names the store, and waits for the decision only if it is not made yet."""

    def __init__(self, mode: str, data_dir: str) -> None:
        self._decision: SecretStoreDecision | None = None
        self._thread = threading.Thread(target=self._decide, args=(mode, data_dir), name="secret-store", daemon=True)
        self._thread.start()

    def _decide(self, mode: str, data_dir: str) -> None:
        from mcp_runtime import decide_secret_store

        self._decision = decide_secret_store(mode, data_dir)

    def wait(self) -> SecretStoreDecision:
        self._thread.join()
        assert self._decision is not None
        return self._decision


def serve(
    args: argparse.Namespace,
    data_dir: Path,
    signals: StopSignals,
    early: EarlyStdio | None,
    secret_store: SecretStoreChoice,
) -> int:
    """Everything serving needs that can refuse to start (exit 2 with one line), then the event loop."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from app_server.process.logs import set_level

    set_level(args.log_level)
    from mcp_runtime import (  # no pydantic: initialize first
        ConfigPolicy,
        RuntimeSettings,
        configure_runtime,
        raise_descriptor_limit,
        safe_fs,
        use_secret_store,
    )

    descriptors = raise_descriptor_limit()  # before any server or socket takes one
    policy = ConfigPolicy(
        args.transports,
        args.stdio_sandbox,
        path_from_shell=args.path_from_shell == "auto",
        oauth_client_metadata_url=args.oauth_client_metadata_url,
        credential_dirs=tuple(args.credential_dir),
        allowed_env=tuple(args.allow_env) if args.allow_env is not None else None,
        registry_url=args.registry_url,
    )
    listen: tuple[Path, socket.socket] | None = None
    if args.listen is not None:
        from app_server.wire.sockets import SocketRefused, bind

        path = Path(args.listen).absolute()
        try:
            listen = (path, bind(path))
        except SocketRefused as refused:
            print(f"{NAME}: --listen refused: {refused}", file=sys.stderr)
            return 2
    if sys.platform == "win32":
        print(f"{NAME}: serving is not supported on Windows: {WINDOWS_GAPS}", file=sys.stderr)
        return 2
    settings = RuntimeSettings(policy, _own_command(options.WATCH_CHILDREN), data_dir)
    configure_runtime(settings)
    try:
        safe_fs.seal(data_dir)  # 0700/0600 throughout, and the temp files of a killed daemon removed
    except OSError as exc:
        print(f"{NAME}: cannot use the data dir {data_dir}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    trace: Trace | None = None
    if args.trace is not None:
        from app_server.wire.trace import Trace, TraceRefused

        try:
            trace = Trace(Path(args.trace).absolute())
        except TraceRefused as refused:
            print(f"{NAME}: {refused}", file=sys.stderr)
            return 2
    decision = secret_store.wait()
    if decision.refusal is not None:
        print(f"{NAME}: {decision.refusal}", file=sys.stderr)
        return 2
    use_secret_store(decision, data_dir)
    import anyio

    uvloop = args.event_loop == "auto" and _has_uvloop()
    sys.stdout = sys.stderr  # stdout carries protocol only: whatever else prints (a library, a logger) goes to stderr
    try:
        anyio.run(
            _serve, settings, listen, signals, early, trace, "uvloop" if uvloop else "asyncio", descriptors,
            backend_options={"use_uvloop": uvloop},
        )  # fmt: skip
    finally:
        if trace is not None:
            trace.close()
    return 0


def _own_command(*args: str) -> list[str]:
    """This program started again with ``args``: the bundle's executable, or this Python running the package."""
    if getattr(sys, "frozen", False):
        return [sys.executable, *args]
    return [sys.executable, "-m", "app_server", *args]


def _has_uvloop() -> bool:
    """uvloop runs each loop pass in C, less CPU per wake-up; it is not built for Windows, where ``auto`` is
    asyncio's own loop."""
    import importlib.util

    return importlib.util.find_spec("uvloop") is not None


async def _serve(
    settings: RuntimeSettings,
    listen: tuple[Path, socket.socket] | None,
    signals: StopSignals,
    early: EarlyStdio | None,
    trace: Trace | None,
    event_loop: str,
    descriptors: tuple[int, int] | None,
) -> None:
    """Serve until stdin ends or a signal arrives, then stop within SPEC §1's bound: settle, close MCP, flush.
    ``descriptors``: the soft descriptor limit as inherited and as raised, for the ``serving`` line."""
    import anyio

    from app_server.daemon import Daemon
    from app_server.process.logs import get_logger
    from app_server.processor import Processor
    from app_server.wire.connection import ClientConnection
    from app_server.wire.sockets import serve as serve_socket
    from app_server.wire.transport import Transport
    from protocol.constants import VERSION

    log = get_logger("app_server.startup")
    data_dir = settings.data_dir
    began = time.monotonic()
    env = dict(os.environ)
    announced = False

    def announce() -> None:
        """Once start-up's loading begins (logging is set up then), or at the latest when the daemon stops."""
        nonlocal announced
        if not announced:
            announced = True
            log.info(
                "serving",
                version=VERSION,
                pid=os.getpid(),
                data_dir=str(data_dir),
                listen=str(listen[0]) if listen is not None else None,
                trace=str(trace.path) if trace is not None else None,
                event_loop=event_loop,
                initialize_answered_early=served is not None and served.client is not None,
                descriptor_limit=list(descriptors) if descriptors is not None else None,
            )

    unread, served = early.handover() if early is not None else (b"", None)
    home = Path(env.get("HOME") or Path.home())
    async with Daemon(data_dir=data_dir, env=env, home=home, settings=settings, trace=trace) as daemon:
        stdio = await Transport.stdio(data_dir, unread, input_ended=early is not None and early.ended)
        main = Processor(daemon, ClientConnection("stdio", stdio))
        processors = {main}

        async def serve_connection(connection: ClientConnection) -> None:
            processor = Processor(daemon, connection)
            processors.add(processor)
            try:
                await processor.serve()
            finally:
                processors.discard(processor)

        async with anyio.create_task_group() as serving:
            stop = anyio.Event()
            await serving.start(signals.watch, stop)
            if served is not None:
                main.adopt(served)
            if listen is not None:
                path, listener = listen
                await serving.start(serve_socket, listener, path, data_dir, trace, serve_connection)
            daemon.spawner.spawn(_load, daemon, announce, name="start-up")
            serving.start_soon(main.serve)
            serving.start_soon(_stop_when_set, main.input_ended, stop)
            await stop.wait()
            shutdown.arm_last_resort(_kill_children)
            for processor in list(processors):
                processor.reading.cancel()
            with anyio.move_on_after(shutdown.SETTLE_S):
                for processor in list(processors):
                    await processor.settled.wait()
            async with anyio.create_task_group() as closing:
                closing.start_soon(daemon.aclose)
                with anyio.move_on_after(shutdown.FLUSH_S):
                    for processor in list(processors):
                        await processor.finished.wait()
            serving.cancel_scope.cancel()
    announce()
    log.info("stopped", uptime_s=round(time.monotonic() - began, 3))


def _kill_children() -> None:
    """Every child process left: its groups, then the orphans it adopted."""
    from mcp_runtime import kill_adopted, kill_live_groups

    kill_live_groups()
    kill_adopted()


async def _stop_when_set(event: anyio.Event, stop: anyio.Event) -> None:
    await event.wait()
    stop.set()


async def _load(daemon: Daemon, announce: Callable[[], None]) -> None:
    """Start-up's background work: after the first answer, set up logging and ``announce`` the daemon; once the
    servers being autostarted are ready (``Daemon.autostart_settled``), load off the loop (it keeps answering
    meanwhile) a thread's owner when they were, then every handler module, so no later first request of a method
    stalls the loop with imports; then freeze what was loaded (``memory``) and give the GIL its default switch
    interval back. No server start waits for this."""
    import anyio

    from app_server.process.logs import configure, get_logger

    await daemon.first_answer.wait()
    configure()
    announce()
    try:
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        await daemon.autostart_settled()  # autostart's sessions first: every server usable sooner
        if daemon.autostarting:
            from mcp_runtime import load_thread_owner

            await load_thread_owner()
        await anyio.to_thread.run_sync(_load_handlers)
    finally:  # even when a load failed (the Spawner reports it): the collector runs again
        sys.setswitchinterval(_DEFAULT_SWITCH_INTERVAL_S)
        frozen = memory.freeze_loaded()
        get_logger("app_server.startup").debug("loaded", frozen_objects=frozen)


_DEFAULT_SWITCH_INTERVAL_S = sys.getswitchinterval()


def _load_handlers() -> None:
    """Every handler module and what it imports (models, runtime helpers), and the allocator told to return large
    blocks (``memory``) before any can pile up."""
    from app_server.handlers import load_all

    memory.return_large_blocks()
    load_all()
