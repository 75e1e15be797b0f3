"""The first stdio lines, served before the event loop and the daemon's modules are imported (SPEC §8).

A host waits on its sidecar until ``initialize`` is answered, and the daemon's imports (asyncio, anyio, the
processor chain) take longer than interpreter start-up itself. So a reader thread serves stdin with the standard
library alone while the main thread imports the rest: it answers a plainly valid ``initialize`` at once
(``handshake``, the same bytes the processor writes), records the ``initialized`` notification and answers
``mcpServer/list`` of a data dir with no store file.
At the first line it cannot answer that way it stops reading: that line and everything after it go to the
processor in order (``Transport.stdio``'s prefix), which answers them exactly as it would have. The reader
waits on stdin and on a wake-up pipe, so the hand-over stops it without it taking a byte meant for the loop.

Only a plain stdio serve command line takes this path; anything argparse or the config policy might refuse,
``--listen`` and the subcommands go the ordinary way (``cli.main``), which decides and reports as before.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import threading
from collections.abc import Mapping, Sequence

from app_server import handshake

STDIN = 0
STDOUT = 1
CHUNK = 1 << 16
LONGEST_LINE = 1 << 16
"""An unfinished line longer than this is left to the processor (it enforces the message size cap)."""
MAX_DEPTH = 128
"""``wire.MAX_DEPTH``: a line with more brackets than this is left to the processor's nesting check."""
SWITCH_INTERVAL_S = 0.0005
"""GIL switch interval while the reader thread serves: it gets the GIL back from the importing main thread soon."""
_LOG_LEVELS = frozenset({"debug", "info", "warning", "error"})
_TRANSPORTS = frozenset({"stdio", "http"})
_EVENT_LOOPS = frozenset({"auto", "asyncio"})
_VALUED_OPTIONS = frozenset({"--data-dir", "--log-level", "--transports", "--stdio-sandbox", "--event-loop"})


def _not_json(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("the number is out of range")
    return value


_DECODER = json.JSONDecoder(parse_constant=_not_json, parse_float=_finite)


def serve_options(argv: Sequence[str]) -> dict[str, str] | None:
    """The options of a plain stdio serve command line that argparse and the config policy are sure to accept
    (a test holds this to ``cli``), else None: the ordinary path parses and reports anything else."""
    options: dict[str, str] = {}
    rest = list(argv)
    while rest:
        name, equals, value = rest.pop(0).partition("=")
        if name not in _VALUED_OPTIONS:
            return None
        if not equals:
            if not rest or rest[0].startswith("-"):
                return None
            value = rest.pop(0)
        options[name] = value
    if options.get("--log-level", "info") not in _LOG_LEVELS or options.get("--event-loop", "auto") not in _EVENT_LOOPS:
        return None
    if "--transports" in options and not set(options["--transports"].split(",")) <= _TRANSPORTS:
        return None
    if "--stdio-sandbox" in options:
        try:
            prefix = json.loads(options["--stdio-sandbox"])
        except ValueError:
            return None
        if not isinstance(prefix, list) or not prefix or not all(isinstance(a, str) and a for a in prefix):
            return None
    return options


def data_dir(value: str | None, env: Mapping[str, str]) -> str | None:
    """``cli``'s data dir as text: ``--data-dir``, else the env defaults (SPEC §1), made absolute. A plain absolute
    path is used as it is; anything pathlib might rewrite goes through pathlib; None when it cannot tell."""
    if value is None:
        if env.get("MCP_APP_SERVER_HOME"):
            value = env["MCP_APP_SERVER_HOME"]
        elif env.get("XDG_DATA_HOME"):
            value = os.path.join(env["XDG_DATA_HOME"], "mcp-app-server")
        elif env.get("HOME"):
            value = os.path.join(env["HOME"], ".local", "share", "mcp-app-server")
        else:
            return None
    if value.startswith("~"):
        return None
    if value.startswith("/") and "//" not in value and "/./" not in value and not value.endswith(("/", "/.")):
        return value
    from pathlib import Path

    return str(Path(value).absolute())


def _message(line: bytes) -> dict | None:
    """The message, when ``wire.decode`` would take the line as this same message; else None (the processor
    judges it). Lines with ``\\u`` escapes or many brackets are left to its surrogate and nesting checks."""
    if b"\\u" in line or line.count(b"{") + line.count(b"[") > MAX_DEPTH:
        return None
    try:
        message = _DECODER.decode(line.decode())
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return None
    request_id = message.get("id")
    if "id" in message and not (isinstance(request_id, str) or type(request_id) is int):
        return None
    return message


class EarlyStdio:
    """stdin served before the loop: what ``initialize`` gave, whether ``initialized`` came, the bytes read but
    not served, end of input and signals seen. The main thread reads these only after ``handover``."""

    def __init__(self, data_dir: str) -> None:
        self.data_dir = data_dir
        self.client: tuple[str, str, frozenset[str]] | None = None
        self.initialized = False
        self.ended = False
        self.signalled = False
        self._input = bytearray()
        self._declined = False
        self._wake_read, self._wake_write = os.pipe()
        self._wake_open = True
        self._thread: threading.Thread | None = None
        self._switch_interval = sys.getswitchinterval()

    def serve_first(self) -> None:
        """Serve stdin in a reader thread while the main thread goes on to import the daemon at once (a host
        that spawns early and initializes later finds it loaded); it stops at the first line it does not
        answer, at end of input or on SIGTERM/SIGINT (recorded for the daemon)."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_signal)
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        self._thread = threading.Thread(target=self._serve, name="early-stdio", daemon=True)
        self._thread.start()

    def handover(self) -> bytes:
        """Stop serving; the bytes read and not answered, for the processor to read first."""
        if self._wake_open:
            self._wake_open = False
            os.write(self._wake_write, b"\0")
        if self._thread is not None:
            self._thread.join()
            sys.setswitchinterval(self._switch_interval)
        os.close(self._wake_write)
        os.close(self._wake_read)
        return bytes(self._input)

    def _on_signal(self, signum: int, frame: object) -> None:
        """Runs in the main thread (so never during ``handover``'s own close); the daemon stops once it serves."""
        self.signalled = True
        if self._wake_open:
            self._wake_open = False
            os.write(self._wake_write, b"\0")

    def _serve(self) -> None:
        while self._read():
            self._serve_lines()

    def _reading(self) -> bool:
        return not (self._declined or self.ended or self.signalled)

    def _read(self) -> bool:
        """Wait for stdin or the wake-up; False once nothing more is to be read here."""
        if not self._reading():
            return False
        try:
            ready = select.select([STDIN, self._wake_read], [], [])[0]
            if self._wake_read in ready:
                return False
            chunk = os.read(STDIN, CHUNK)
        except OSError:
            self._declined = True  # the loop's reader meets the same stdin and reports it
            return False
        if not chunk:
            self.ended = True
            return False
        self._input += chunk
        return True

    def _serve_lines(self) -> None:
        """Answer complete lines from the front of the input while each is one this path answers; only the
        lines answered leave the input, so whatever goes wrong here, the processor gets every other line."""
        start = 0
        try:
            while not self._declined:
                end = self._input.find(b"\n", start)
                if end < 0:
                    self._declined = len(self._input) - start > LONGEST_LINE
                    break
                line = bytes(self._input[start:end])
                message = _message(line) if line.strip() else {}
                answer = None if message is None else self._answer(message)
                if answer is None or (answer and not _send(answer)):
                    self._declined = True
                    break
                self._record(message)
                start = end + 1
        except Exception:
            self._declined = True  # the processor is the authority on this line; it answers it
        finally:
            del self._input[:start]

    def _answer(self, message: dict) -> bytes | None:
        """The answer line (``b""`` when none is due, as for a blank line), or None when the processor must
        judge this message."""
        if not message:
            return b""
        method, params = message["method"], message.get("params")
        if self.client is None:
            if method != "initialize" or "id" not in message:
                return None
            client = handshake.quick_params(params if params is not None else {})
            return None if client is None else handshake.initialize_line(message["id"], client[:2], self.data_dir)
        if method == "initialized" and "id" not in message:
            return b""
        if method == "mcpServer/list" and "id" in message:
            empty = handshake.empty_server_list(params, self.data_dir)
            return handshake.line({"jsonrpc": "2.0", "id": message["id"], "result": empty}) if empty else None
        return None

    def _record(self, message: dict) -> None:
        """What an answered message changes, once its answer is out."""
        if message.get("method") == "initialize":
            params = message.get("params")
            self.client = handshake.quick_params(params if params is not None else {})
        elif message.get("method") == "initialized":
            self.initialized = True


def _send(data: bytes) -> bool:
    """Write an answer; False when stdout would block (the client is not reading): that line is then left to
    the processor, whose backpressure applies. A client that is gone loses the answer, as on the loop."""
    try:
        if not select.select([], [STDOUT], [], 0)[1]:
            return False
    except (OSError, ValueError):
        return False
    try:
        while data:
            try:
                data = data[os.write(STDOUT, data) :]
            except BlockingIOError:
                select.select([], [STDOUT], [])
    except OSError:
        pass
    return True


def begin(argv: Sequence[str], env: Mapping[str, str]) -> EarlyStdio | None:
    """Serve the first stdio lines when this is a plain stdio serve on a stdin ``select`` can wait on."""
    options = serve_options(argv)
    if options is None:
        return None
    directory = data_dir(options.get("--data-dir"), env)
    if directory is None:
        return None
    try:
        select.select([STDIN], [STDOUT], [], 0)
    except (OSError, ValueError):
        return None
    early = EarlyStdio(directory)
    early.serve_first()
    return early


def launch() -> int:
    """The program (``python -m app_server`` and the ``mcp-app-server`` script)."""
    early = begin(sys.argv[1:], os.environ)
    from app_server.cli import main

    return main(early=early)
