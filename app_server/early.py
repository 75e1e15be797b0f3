"""``initialize`` answered on stdio while the daemon's modules still import (SPEC §8: a host waits for it).

A reader thread answers a plainly valid ``initialize`` with ``handshake``'s bytes and records an ``initialized``
notification, while the main thread imports the rest; at the first other line it stops reading, and that line
and everything after it go to the processor in order (``Transport.stdio``'s prefix). It waits on stdin and on a
wake-up pipe, so the hand-over stops it without it taking a byte meant for the loop.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from app_server import collector, handshake, options, wire
from protocol.constants import NAME

if TYPE_CHECKING:
    from protocol.jsonrpc import RequestId

STDIN = 0
STDOUT = 1
CHUNK = 1 << 16
LONGEST_LINE = 1 << 16
"""An unfinished line longer than this is left to the processor (it enforces the message size cap)."""
SWITCH_INTERVAL_S = 0.0005
"""GIL switch interval while the reader thread serves: it gets the GIL back from the importing main thread soon."""


class EarlyStdio:
    """stdin served before the loop: what ``initialize`` gave, whether ``initialized`` came, the bytes read but
    not served, end of input and signals seen. The main thread reads these only after ``handover``."""

    def __init__(self, data_dir: str) -> None:
        self.data_dir = data_dir
        self.client: tuple[str, str, frozenset[str]] | None = None
        self.answered: tuple[RequestId, float, int] | None = None
        """The ``initialize`` answered here: its id, the seconds it took and the answer's size (for its log line)."""
        self.initialized = False
        self.ended = False
        self.signalled: str | None = None
        """The name of the stop signal that arrived first, if one did."""
        self._input = bytearray()
        self._declined = False
        self._wake_read, self._wake_write = os.pipe()
        self._wake_open = True
        self._thread: threading.Thread | None = None
        self._switch_interval = sys.getswitchinterval()

    def serve_first(self) -> None:
        """Serve stdin in a reader thread while the main thread goes on to import the daemon; it stops at the
        first line it does not answer, at end of input or on a stop signal (recorded for the daemon)."""
        for signum in options.STOP_SIGNALS:
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
        if self.signalled is None:
            self.signalled = signal.Signals(signum).name
        if self._wake_open:
            self._wake_open = False
            os.write(self._wake_write, b"\0")

    def _serve(self) -> None:
        while self._read():
            self._serve_lines()

    def _read(self) -> bool:
        """Wait for stdin or the wake-up; False once nothing more is to be read here."""
        if self._declined or self.ended or self.signalled:
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
            message = wire.decode(line, fast=False)
        except wire.Rejected:
            return False
        if message is None:
            return False
        method, has_id = message.get("method"), "id" in message
        if self.client is None and method == "initialize" and has_id:
            began = time.perf_counter()
            params = message.get("params")
            client = handshake.quick_params(params if params is not None else {})
            answer = handshake.initialize_line(message["id"], client[:2], self.data_dir) if client else b""
            if client is None or not _send(answer):
                return False
            self.client = client
            self.answered = (message["id"], time.perf_counter() - began, len(answer))
            return True
        if self.client is not None and method == "initialized" and not has_id:
            self.initialized = True
            return True
        return False


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


def begin(args: argparse.Namespace, env: Mapping[str, str]) -> EarlyStdio | None:
    """Serve the first stdio lines when the command line serves on stdio alone (``--listen``, ``--trace`` and
    the subcommands go the ordinary way: a trace records every line) and stdin is one ``select`` can wait on."""
    if args.command is not None or args.listen is not None or args.trace is not None:
        return None
    try:
        select.select([STDIN], [STDOUT], [], 0)
    except (OSError, ValueError):
        return None
    early = EarlyStdio(options.data_dir(args.data_dir, env))
    early.serve_first()
    return early


def launch() -> int:
    """The program (``python -m app_server`` and the ``mcp-app-server`` script)."""
    if sys.argv[1:] == [options.WATCH_CHILDREN]:
        from mcp_runtime import watch_children

        return watch_children()
    collector.pause()
    try:
        args = options.parse(sys.argv[1:])
    except options.UsageError as refused:
        refused.report()
    if args.command is None:
        try:
            options.prepare_data_dir(options.data_dir(args.data_dir, os.environ))
        except options.DataDirUnusable as unusable:
            print(f"{NAME}: {unusable}", file=sys.stderr)
            return 2
    early = begin(args, os.environ)
    from app_server.cli import main

    return main(args, early)
