"""stdin served in a thread before the event loop runs, so a host waiting on its sidecar gets its ``initialize``
answer while the main thread still imports the daemon. Standard library and the pydantic-free wire helpers only."""

from __future__ import annotations

import os
import select
import sys
import threading
import time
from typing import TYPE_CHECKING

from app_server.wire import decode, handshake, pipes

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from app_server.process.signals import StopSignals
    from mcp_runtime import SecretStoreDecision

CHUNK = 1 << 16
LONGEST_EARLY_LINE = 1 << 16
"""An unfinished line longer than this is left to the processor (it enforces the message size cap)."""
SWITCH_INTERVAL_S = 0.0005
"""The GIL switch interval while start-up imports beside a thread that must answer soon (the reader, then the
event loop): the importing thread gives the GIL back within about this long. CPython's default comes back once
start-up has loaded."""


class EarlyStdio:
    """The early reader: it answers a plainly valid ``initialize`` (with the bytes
    the processor would write) and notes an ``initialized`` after it. The main thread reads what it served only
    after ``handover``, which stops it without it taking a byte meant for the loop (it waits on stdin and on a
    wake-up pipe)."""

    def __init__(
        self, data_dir: str, secret_store: Callable[[], SecretStoreDecision], initialized: threading.Event
    ) -> None:
        self._secret_store = secret_store
        self._initialized_event = initialized
        self._data_dir = data_dir
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
        cls,
        args: argparse.Namespace,
        data_dir: str,
        signals: StopSignals,
        secret_store: Callable[[], SecretStoreDecision],
        initialized: threading.Event,
    ) -> EarlyStdio | None:
        """Serve the first stdio lines when the daemon serves on stdio alone (``--listen`` and ``--trace`` go the
        ordinary way: a socket client may come first, and a trace records every line) and stdin is one ``select``
        can wait on. The stop signals are caught from here on either way; ``initialized`` is set when the host's
        ``initialized`` is read here."""
        if args.listen is not None or args.trace is not None or not _selectable():
            signals.install(lambda: None)
            return None
        early = cls(data_dir, secret_store, initialized)
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
            store = self._secret_store()
            if store.refusal is not None:
                return False  # start-up exits 2 saying why
            answer = handshake.initialize_line(message["id"], client, self._data_dir, store.wire())
            try:
                pipes.write_all(pipes.STDOUT, answer)
            except OSError:
                pass  # a client that is gone loses the answer, as on the loop
            self._client = client
            self._answered = (message["id"], time.perf_counter() - began, len(answer))
            return True
        if self._client is not None and method == "initialized" and not has_id:
            self._initialized = True
            self._initialized_event.set()
            return True
        return False


def _selectable() -> bool:
    try:
        select.select([pipes.STDIN], [pipes.STDOUT], [], 0)
    except (OSError, ValueError):
        return False
    return True
