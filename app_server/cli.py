"""Command line: serve on stdio (the default), ``generate-json-schema --out DIR`` or ``generate-ts --out DIR``."""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskStatus

from app_server import collector, options
from app_server.logs import get_logger
from protocol.constants import NAME, VERSION

if TYPE_CHECKING:
    from app_server.daemon import Daemon
    from app_server.early import EarlyStdio
    from app_server.trace import Trace

log = get_logger("app_server")
SETTLE_S = 1.0
"""Shutdown: time for connections to answer (or cancel) their in-flight requests."""
CLOSE_S = 2.0
"""Shutdown: time for MCP connections to close before left-over process groups are killed."""
FLUSH_S = 2.0
"""Shutdown: time for connections to flush their last output, while the MCP connections close."""


WINDOWS_GAPS = "the data dir's guarantees need O_NOFOLLOW and dir_fd, stdio servers need process groups"
"""What serving lacks on Windows (SPEC §10: type-checked and importable there, refused explicitly)."""


def _own_command(*args: str) -> list[str]:
    """This program started again with ``args``: the bundle's executable, or this Python running the package."""
    if getattr(sys, "frozen", False):
        return [sys.executable, *args]
    return [sys.executable, "-m", "app_server", *args]


def use_uvloop(choice: str) -> bool:
    """uvloop runs each loop pass in C, less CPU per wake-up; it is not built for Windows, where ``auto`` is
    asyncio's own loop."""
    return choice == "auto" and importlib.util.find_spec("uvloop") is not None


def main(args: argparse.Namespace, early: EarlyStdio | None = None) -> int:
    """Run the parsed command line (``app_server.options``); ``early``: the stdio lines ``app_server.early``
    served, if it did."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from app_server.logs import set_level

    set_level(args.log_level)
    if args.command is not None:
        collector.resume()
    if args.command == "generate-json-schema":
        from protocol.schema_export import write_schemas

        write_schemas(Path(args.out))
        return 0
    if args.command == "generate-ts":
        from protocol.ts_export import write_typescript

        write_typescript(Path(args.out))
        return 0
    from mcp_runtime import ConfigPolicy, set_policy, use_child_watcher  # no pydantic: initialize comes first

    set_policy(
        ConfigPolicy(
            args.transports,
            args.stdio_sandbox,
            path_from_shell=args.path_from_shell == "auto",
            oauth_client_metadata_url=args.oauth_client_metadata_url,
        )
    )
    listen: tuple[Path, socket.socket] | None = None
    if args.listen is not None:
        path = Path(args.listen).absolute()
        from app_server.listener import SocketRefused, bind

        try:
            listen = (path, bind(path))
        except SocketRefused as refused:
            print(f"mcp-app-server: --listen refused: {refused}", file=sys.stderr)
            return 2
    if sys.platform == "win32":
        print(f"mcp-app-server: serving is not supported on Windows: {WINDOWS_GAPS}", file=sys.stderr)
        return 2
    use_child_watcher(_own_command(options.WATCH_CHILDREN))
    env = dict(os.environ)
    data_dir = Path(options.data_dir(args.data_dir, env))
    from mcp_runtime import safe_fs

    try:
        safe_fs.seal(data_dir)  # 0700/0600 throughout, and the temp files of a killed daemon removed
    except OSError as exc:
        print(f"{NAME}: cannot use the data dir {data_dir}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    trace: Trace | None = None
    if args.trace is not None:
        from app_server.trace import Trace

        try:
            trace = Trace(Path(args.trace).absolute())
        except OSError as exc:
            print(f"{NAME}: cannot write the trace file {args.trace}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    uvloop = use_uvloop(args.event_loop)
    loop_name = "uvloop" if uvloop else "asyncio"
    sys.stdout = sys.stderr  # stdout carries protocol only: whatever else prints (a library, a logger) goes to stderr
    try:
        anyio.run(_serve, data_dir, env, listen, early, loop_name, trace, backend_options={"use_uvloop": uvloop})
    finally:
        if trace is not None:
            trace.close()
    return 0


async def _serve(
    data_dir: Path,
    env: dict[str, str],
    listen: tuple[Path, socket.socket] | None,
    early: EarlyStdio | None,
    event_loop: str,
    trace: Trace | None,
) -> None:
    """Serve until stdin ends or a signal arrives, then stop within SPEC §1's bound: settle, close MCP, flush."""
    from app_server.connection import ClientConnection
    from app_server.daemon import Daemon
    from app_server.listener import serve as serve_socket
    from app_server.processor import Processor
    from app_server.startup import load
    from app_server.transport import Transport

    began = time.monotonic()
    daemon = Daemon(data_dir=data_dir, env=env, home=Path(env.get("HOME") or Path.home()), trace=trace)
    prefix = early.handover() if early is not None else b""
    stdio = await Transport.stdio(data_dir, prefix, input_ended=early is not None and early.ended)
    main_processor = Processor(daemon, ClientConnection("stdio", stdio))

    @functools.cache
    def announce() -> None:
        """Once start-up's loading begins (logging is set up then), or at the latest when the daemon stops."""
        answered_early = early is not None and early.client is not None
        log.info(
            "serving",
            version=VERSION,
            pid=os.getpid(),
            data_dir=str(data_dir),
            listen=str(listen[0]) if listen is not None else None,
            trace=str(trace.path) if trace is not None else None,
            event_loop=event_loop,
            initialize_answered_early=answered_early,
        )

    processors = {main_processor}
    closing = False
    try:
        async with anyio.create_task_group() as tasks:
            daemon.tasks = tasks
            stop = anyio.Event()
            await tasks.start(_stop_on_signal, stop)
            if early is not None and early.signalled:
                announce()
                log.info("signal_received", signal=early.signalled)
                stop.set()  # a signal before the loop took them over
            elif early is not None:
                main_processor.resume(early.client, early.initialized, early.answered)
            if listen is not None:
                path, listener = listen
                await tasks.start(serve_socket, daemon, listener, path, processors)
            daemon.spawner.spawn(load, daemon, _load_dispatch, announce, name="start-up")
            tasks.start_soon(main_processor.serve)
            tasks.start_soon(_stop_when_set, main_processor.input_ended, stop)
            await stop.wait()
            for processor in list(processors):
                processor.reading.cancel()
            with anyio.move_on_after(SETTLE_S):
                for processor in list(processors):
                    await processor.settled.wait()
            closing = True
            async with anyio.create_task_group() as shutdown:
                shutdown.start_soon(_close_runtime, daemon)
                with anyio.move_on_after(FLUSH_S):
                    for processor in list(processors):
                        await processor.finished.wait()
            tasks.cancel_scope.cancel()
    finally:
        if not closing:
            with anyio.CancelScope(shield=True):
                await _close_runtime(daemon)
    announce()
    log.info("stopped", uptime_s=round(time.monotonic() - began, 3))


def _load_dispatch() -> None:
    """Every handler module and what it imports (models, runtime helpers), loaded by start-up in the background;
    and the allocator told to return large blocks (``app_server.memory``), before any can pile up."""
    from app_server import memory
    from app_server.handlers import load_all

    memory.return_large_blocks()
    load_all()


async def _close_runtime(daemon: Daemon) -> None:
    """Close every MCP connection; process groups still alive after ``CLOSE_S`` are killed, so the
    (shielded) per-server stop sequences end at once instead of waiting out their own graces."""
    async with anyio.create_task_group() as closing:
        closing.start_soon(_kill_children_after, CLOSE_S)
        await daemon.aclose()
        closing.cancel_scope.cancel()


async def _kill_children_after(delay: float) -> None:
    await anyio.sleep(delay)
    from mcp_runtime import kill_live_groups

    if kill_live_groups():
        log.warning("killed_children_after_close_timeout")


async def _stop_when_set(event: anyio.Event, stop: anyio.Event) -> None:
    await event.wait()
    stop.set()


async def _stop_on_signal(stop: anyio.Event, *, task_status: TaskStatus) -> None:
    """SIGTERM, SIGINT or SIGHUP: stop reading every connection; in-flight requests are answered, then we exit 0.

    Signals stay caught until the daemon exits, so a repeated SIGTERM during shutdown does not kill it mid-way."""
    with anyio.open_signal_receiver(*options.STOP_SIGNALS) as signals:
        task_status.started()
        async for signum in signals:
            log.info("signal_received", signal=signal.Signals(signum).name)
            stop.set()
