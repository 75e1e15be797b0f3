"""Command line: serve on stdio (the default), ``generate-json-schema --out DIR`` or ``generate-ts --out DIR``."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskStatus

from app_server.logs import get_logger

if TYPE_CHECKING:
    from app_server.daemon import Daemon
    from app_server.processor import Processor

log = get_logger("app_server")


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
    parser.add_argument("--transports", metavar="stdio,http", help="the MCP transports this deployment allows")
    parser.add_argument("--stdio-sandbox", metavar="JSON", help="argv prefix (JSON list) for every stdio server")
    commands = parser.add_subparsers(dest="command")
    schema = commands.add_parser("generate-json-schema", help="write the protocol's JSON Schema files")
    schema.add_argument("--out", type=Path, required=True)
    typescript = commands.add_parser("generate-ts", help="write the protocol's TypeScript bindings (index.ts)")
    typescript.add_argument("--out", type=Path, required=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from app_server.logs import set_level

    set_level(args.log_level)
    if args.command == "generate-json-schema":
        from protocol.schema_export import write_schemas

        write_schemas(args.out)
        return 0
    if args.command == "generate-ts":
        from protocol.ts_export import write_typescript

        write_typescript(args.out)
        return 0
    listen: Path | None = None
    if args.listen is not None:
        if not args.listen.startswith("unix:") or len(args.listen) <= len("unix:"):
            _parser().error("--listen takes unix:PATH")
        listen = Path(args.listen[len("unix:") :]).absolute()
    from mcp_runtime import ConfigPolicy, set_policy

    try:
        set_policy(ConfigPolicy.from_options(args.transports, args.stdio_sandbox))
    except ValueError as exc:
        _parser().error(str(exc))
    env = dict(os.environ)
    data_dir = (args.data_dir or default_data_dir(env)).expanduser().absolute()
    from mcp_runtime import safe_fs

    safe_fs.seal(data_dir)  # 0700/0600 throughout, and the temp files of a killed daemon removed
    anyio.run(_serve, data_dir, env, listen)
    return 0


async def _serve(data_dir: Path, env: dict[str, str], listen: Path | None) -> None:
    from app_server.connection import ClientConnection
    from app_server.daemon import Daemon
    from app_server.processor import Processor
    from app_server.transport import Transport

    daemon = Daemon(data_dir=data_dir, env=env, home=Path(env.get("HOME") or Path.home()))
    main_processor = Processor(daemon, ClientConnection("stdio", await Transport.stdio()))
    processors = {main_processor}
    try:
        async with anyio.create_task_group() as tasks:
            daemon.tasks = tasks
            await tasks.start(_stop_on_signal, processors)
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


async def _stop_on_signal(processors: set[Processor], *, task_status: TaskStatus) -> None:
    """SIGTERM/SIGINT: stop reading every connection; in-flight requests are answered, then we exit 0."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async for _ in signals:
            log.info("signal_received")
            for processor in processors:
                processor.reading.cancel()
            return


async def _listen(daemon: Daemon, path: Path, processors: set[Processor], *, task_status: TaskStatus) -> None:
    """Accept extra client connections on a 0600 Unix socket, each served like stdio."""
    from app_server.connection import ClientConnection
    from app_server.processor import Processor
    from app_server.transport import Transport

    counter = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal counter
        counter += 1
        processor = Processor(daemon, ClientConnection(f"unix-{counter}", Transport(reader, writer)))
        processors.add(processor)
        try:
            await processor.serve()
        finally:
            processors.discard(processor)
            writer.close()

    path.unlink(missing_ok=True)
    old_umask = os.umask(0o177)
    try:
        server = await asyncio.start_unix_server(handle, path=str(path))
    finally:
        os.umask(old_umask)
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    task_status.started()
    try:
        async with server:
            await anyio.sleep_forever()
    finally:
        path.unlink(missing_ok=True)
