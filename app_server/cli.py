"""Command line: serve on stdio (the default), or ``generate-json-schema --out DIR``."""

from __future__ import annotations

import argparse
import os
import signal
import stat
from collections.abc import Sequence
from pathlib import Path

import anyio
import structlog

log = structlog.get_logger("app_server")


def default_data_dir(env: dict[str, str]) -> Path:
    """``MCP_APP_SERVER_HOME``, else ``$XDG_DATA_HOME/mcp-app-server``, else ``~/.local/share/mcp-app-server``."""
    if env.get("MCP_APP_SERVER_HOME"):
        return Path(env["MCP_APP_SERVER_HOME"])
    if env.get("XDG_DATA_HOME"):
        return Path(env["XDG_DATA_HOME"]) / "mcp-app-server"
    return Path(env.get("HOME") or Path.home()) / ".local" / "share" / "mcp-app-server"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcp-app-server", description=__doc__)
    parser.add_argument("--data-dir", type=Path, help="where mcps.json, threads and credentials live")
    parser.add_argument("--listen", metavar="unix:PATH", help="also accept client connections on a Unix socket")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    commands = parser.add_subparsers(dest="command")
    schema = commands.add_parser("generate-json-schema", help="write the protocol's JSON Schema files")
    schema.add_argument("--out", type=Path, required=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from app_server.logs import configure

    configure(args.log_level)
    if args.command == "generate-json-schema":
        from protocol.schema_export import write_schemas

        write_schemas(args.out)
        return 0
    listen: Path | None = None
    if args.listen is not None:
        if not args.listen.startswith("unix:") or len(args.listen) <= len("unix:"):
            _parser().error("--listen takes unix:PATH")
        listen = Path(args.listen[len("unix:") :])
    env = dict(os.environ)
    data_dir = (args.data_dir or default_data_dir(env)).expanduser().absolute()
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    anyio.run(_serve, data_dir, env, listen)
    return 0


async def _serve(data_dir: Path, env: dict[str, str], listen: Path | None) -> None:
    from app_server.connection import ClientConnection
    from app_server.daemon import Daemon
    from app_server.processor import Processor
    from app_server.transport import StdioTransport
    from mcp_runtime.store import ConfigStore

    daemon = Daemon(data_dir=data_dir, env=env, home=Path(env.get("HOME") or Path.home()), store=ConfigStore(data_dir))
    main_processor = Processor(daemon, ClientConnection("stdio", await StdioTransport.open()))
    processors = {main_processor}
    try:
        async with anyio.create_task_group() as tasks:
            daemon.tasks = tasks
            tasks.start_soon(_stop_on_signal, processors)
            if listen is not None:
                await tasks.start(_listen, daemon, listen, processors)
            await main_processor.serve()
            for processor in processors:
                processor.reading.cancel()
            tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await daemon.aclose()
    log.info("stopped")


async def _stop_on_signal(processors: set[object]) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            log.info("signal_received")
            for processor in processors:
                processor.reading.cancel()  # type: ignore[attr-defined]
            return


async def _listen(daemon: object, path: Path, processors: set[object], *, task_status: anyio.abc.TaskStatus) -> None:
    """Accept extra client connections on a 0600 Unix socket, each served like stdio."""
    from app_server.connection import ClientConnection
    from app_server.processor import Processor
    from app_server.transport import StreamTransport

    path.unlink(missing_ok=True)
    old_umask = os.umask(0o177)
    try:
        listener = await anyio.create_unix_listener(path)
    finally:
        os.umask(old_umask)
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    counter = 0

    async def handle(stream: anyio.abc.SocketStream) -> None:
        nonlocal counter
        counter += 1
        processor = Processor(daemon, ClientConnection(f"unix-{counter}", StreamTransport(stream)))  # type: ignore[arg-type]
        processors.add(processor)
        try:
            await processor.serve()
        finally:
            processors.discard(processor)
            await stream.aclose()

    task_status.started()
    try:
        async with listener:
            await listener.serve(handle)
    finally:
        path.unlink(missing_ok=True)
