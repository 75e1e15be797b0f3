"""Start-up in one place: the program's entry, the early ``initialize`` reader, the hand-over to the processor, the
stop signals, serving, and shutdown within SPEC §1's bound.

A host waits on its sidecar until ``initialize`` is answered, so the reader answers it on stdio from a thread while
the main thread imports the daemon (the event loop, pydantic, the handlers). At the first line the reader does
not answer it stops; that line and everything after it go to the processor in order, and what the reader served
(the client, an ``initialized``) is handed over with them. Only this module's top level runs before ``initialize``
is answered: it imports the standard library and the pydantic-free wire helpers, nothing else.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from app_server.process import memory, options
from app_server.wire import decode, handshake, pipes
from protocol.constants import NAME

if TYPE_CHECKING:
    import socket

    import anyio
    from anyio.abc import TaskStatus

    from app_server.context import Daemon
    from app_server.wire.trace import Trace
    from mcp_runtime import SecretStoreDecision

CHUNK = 1 << 16
LONGEST_EARLY_LINE = 1 << 16
"""An unfinished line longer than this is left to the processor (it enforces the message size cap)."""
SWITCH_INTERVAL_S = 0.0005
"""The GIL switch interval while start-up imports beside a thread that must answer soon (the reader, then the
event loop): the importing thread gives the GIL back within about this long. CPython's default comes back once
start-up has loaded."""
SETTLE_S = 1.0
"""Shutdown: time for connections to answer (or cancel) their in-flight requests."""
FLUSH_S = 2.0
"""Shutdown: time for connections to flush their last output, while the MCP connections close."""
WINDOWS_GAPS = "the data dir's guarantees need O_NOFOLLOW and dir_fd, stdio servers need process groups"
"""What serving lacks on Windows (SPEC §10: type-checked and importable there, refused explicitly)."""


def launch() -> int:
    """The program (the ``mcp-app-server`` script and ``python -m app_server``)."""
    if sys.argv[1:] == [options.WATCH_CHILDREN]:
        from mcp_runtime import watch_children

        return watch_children()
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
    early = EarlyStdio.begin(args, data_dir, signals, secret_store)
    return serve(args, Path(data_dir), signals, early, secret_store)


def _subcommand(args: argparse.Namespace) -> int:
    memory.resume_collector()
    if args.command == "generate-json-schema":
        from protocol.schema_export import write_schemas

        write_schemas(Path(args.out))
    else:
        from protocol.ts_export import write_typescript

        write_typescript(Path(args.out))
    return 0


class StopSignals:
    """SIGTERM, SIGINT and SIGHUP stop the daemon alike (exit 0). Before the event loop runs, a handler records the
    first and wakes start-up's reader; once the loop runs, its receiver takes them, and one that came before
    stops the daemon at once. They stay caught until the daemon exits, so a repeated SIGTERM during shutdown does
    not kill it midway."""

    def __init__(self) -> None:
        self.first: str | None = None
        self._wake: Callable[[], None] = lambda: None

    def install(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        for signum in options.STOP_SIGNALS:
            signal.signal(signum, self._received)

    def _received(self, signum: int, frame: object) -> None:
        """Runs in the main thread, between its bytecodes."""
        if self.first is None:
            self.first = signal.Signals(signum).name
        self._wake()

    async def watch(self, stop: anyio.Event, *, task_status: TaskStatus) -> None:
        import anyio

        from app_server.process.logs import get_logger

        log = get_logger("app_server.startup")
        with anyio.open_signal_receiver(*options.STOP_SIGNALS) as received:
            task_status.started()
            if self.first is not None:
                log.info("signal_received", signal=self.first)
                stop.set()
            async for signum in received:
                log.info("signal_received", signal=signal.Signals(signum).name)
                stop.set()


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


class EarlyStdio:
    """stdin served in a thread before the loop runs: it answers a plainly valid ``initialize`` (with the bytes
    the processor would write) and notes an ``initialized`` after it. The main thread reads what it served only
    after ``handover``, which stops it without it taking a byte meant for the loop (it waits on stdin and on a
    wake-up pipe)."""

    def __init__(self, data_dir: str, secret_store: SecretStoreChoice) -> None:
        self._data_dir = data_dir
        self._secret_store = secret_store
        self._client: handshake.Client | None = None
        self._answered: tuple[int | str, float, int] | None = None
        self._initialized = False
        self.ended = False
        """stdin reached its end while the reader served it: the loop does not read it again."""
        self._input = bytearray()
        self._declined = False
        self._wake_read, self._wake_write = os.pipe()
        self._woken = False
        self._thread = threading.Thread(target=self._serve, name="early-stdio", daemon=True)

    @classmethod
    def begin(
        cls, args: argparse.Namespace, data_dir: str, signals: StopSignals, secret_store: SecretStoreChoice
    ) -> EarlyStdio | None:
        """Serve the first stdio lines when the daemon serves on stdio alone (``--listen`` and ``--trace`` go the
        ordinary way: a socket client may come first, and a trace records every line) and stdin is one ``select``
        can wait on. The stop signals are caught from here on either way."""
        if args.listen is not None or args.trace is not None or not _selectable():
            signals.install(lambda: None)
            return None
        early = cls(data_dir, secret_store)
        signals.install(early._wake)
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        early._thread.start()
        return early

    def handover(self) -> tuple[bytes, handshake.ServedEarly]:
        """Stop serving; the bytes read and not served, for the processor to read first, and what was served."""
        self._wake()
        self._thread.join()
        os.close(self._wake_write)
        os.close(self._wake_read)
        return bytes(self._input), handshake.ServedEarly(self._client, self._answered, self._initialized)

    def _wake(self) -> None:
        """From the main thread only (a signal handler, or ``handover``): never twice, never after the close."""
        if not self._woken:
            self._woken = True
            os.write(self._wake_write, b"\0")

    def _serve(self) -> None:
        while self._read():
            self._serve_lines()

    def _read(self) -> bool:
        """Wait for stdin or the wake-up; False once nothing more is to be read here."""
        if self._declined or self.ended:
            return False
        try:
            ready = select.select([pipes.STDIN, self._wake_read], [], [])[0]
            if self._wake_read in ready:
                return False
            chunk = os.read(pipes.STDIN, CHUNK)
        except OSError:
            self._declined = True  # the loop's reader meets the same stdin and reports it
            return False
        if not chunk:
            self.ended = True
            return False
        self._input += chunk
        return True

    def _serve_lines(self) -> None:
        """Answer complete lines from the front of the input while each is one this reader answers; only the
        lines answered leave the input, so whatever goes wrong here, the processor gets every other line."""
        start = 0
        try:
            while not self._declined:
                end = self._input.find(b"\n", start)
                if end < 0:
                    self._declined = len(self._input) - start > LONGEST_EARLY_LINE
                    break
                if not self._served(bytes(self._input[start:end])):
                    self._declined = True
                    break
                start = end + 1
        except Exception:
            self._declined = True  # the processor is the authority on this line; it answers it
        finally:
            del self._input[:start]

    def _served(self, line: bytes) -> bool:
        """Serve one line if it is a blank line, a plainly valid ``initialize`` or the ``initialized`` after it;
        False leaves it (and the rest) to the processor."""
        if not line.strip():
            return True
        try:
            message = decode.decode(line, fast=False)
        except decode.Rejected:
            return False
        if message is None:
            return False
        method, has_id = message.get("method"), "id" in message
        if self._client is None and method == "initialize" and has_id:
            began = time.perf_counter()
            params = message.get("params")
            client = handshake.quick_params(params if params is not None else {})
            if client is None or not pipes.writable_now(pipes.STDOUT):
                return False  # a client that does not read meets the processor's backpressure instead
            store = self._secret_store.wait()
            if store.refusal is not None:
                return False  # start-up exits 2 saying why
            answer = handshake.initialize_line(message["id"], client[:2], self._data_dir, store.wire())
            try:
                pipes.write_all(pipes.STDOUT, answer)
            except OSError:
                pass  # a client that is gone loses the answer, as on the loop
            self._client = client
            self._answered = (message["id"], time.perf_counter() - began, len(answer))
            return True
        if self._client is not None and method == "initialized" and not has_id:
            self._initialized = True
            return True
        return False


def _selectable() -> bool:
    try:
        select.select([pipes.STDIN], [pipes.STDOUT], [], 0)
    except (OSError, ValueError):
        return False
    return True


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
        keep_login_path,
        raise_descriptor_limit,
        safe_fs,
        set_policy,
        use_child_watcher,
        use_secret_store,
    )

    descriptors = raise_descriptor_limit()  # before any server or socket takes one
    set_policy(
        ConfigPolicy(
            args.transports,
            args.stdio_sandbox,
            path_from_shell=args.path_from_shell == "auto",
            oauth_client_metadata_url=args.oauth_client_metadata_url,
            credential_dirs=tuple(args.credential_dir),
            allowed_env=tuple(args.allow_env) if args.allow_env is not None else None,
            registry_url=args.registry_url,
        )
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
    use_child_watcher(_own_command(options.WATCH_CHILDREN))
    keep_login_path(data_dir)
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
            _serve, data_dir, listen, signals, early, trace, "uvloop" if uvloop else "asyncio", descriptors,
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
    data_dir: Path,
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

    from app_server.context import Daemon
    from app_server.process.logs import get_logger
    from app_server.processor import Processor
    from app_server.wire.connection import ClientConnection
    from app_server.wire.sockets import serve as serve_socket
    from app_server.wire.transport import Transport
    from protocol.constants import VERSION

    log = get_logger("app_server.startup")
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
    async with Daemon(data_dir=data_dir, env=env, home=Path(env.get("HOME") or Path.home()), trace=trace) as daemon:
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
            for processor in list(processors):
                processor.reading.cancel()
            with anyio.move_on_after(SETTLE_S):
                for processor in list(processors):
                    await processor.settled.wait()
            async with anyio.create_task_group() as shutdown:
                shutdown.start_soon(daemon.aclose)
                with anyio.move_on_after(FLUSH_S):
                    for processor in list(processors):
                        await processor.finished.wait()
            serving.cancel_scope.cancel()
    announce()
    log.info("stopped", uptime_s=round(time.monotonic() - began, 3))


async def _stop_when_set(event: anyio.Event, stop: anyio.Event) -> None:
    await event.wait()
    stop.set()


async def _load(daemon: Daemon, announce: Callable[[], None]) -> None:
    """Start-up's background work: after the first answer, set up logging and ``announce`` the daemon; once the
    servers being autostarted have loaded what they need, load in a worker thread (the loop keeps answering
    meanwhile) every handler module, so no later first request of a method stalls the loop with imports; then
    freeze what was loaded (``memory``) and give the GIL its default switch interval back. No server start waits
    for this."""
    import anyio

    from app_server.process.logs import configure, get_logger

    await daemon.after_first_answer()
    configure()
    announce()
    try:
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        await daemon.runtime_loaded()  # servers being autostarted load what they need first
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
