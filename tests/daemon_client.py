"""A small JSON-lines client that drives the real daemon as a subprocess (or over its Unix socket).

Messages are read by a background thread into a list guarded by a condition, so tests wait for a
specific response, notification or server request with a bounded timeout instead of sleeping.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TIMEOUT = 20.0
DAEMON_COMMAND_ENV = "MCP_APP_SERVER_TEST_DAEMON"
"""A JSON argv that replaces the checkout's daemon (an installed wheel's script, the bundle): the same checks then
run against the shipped artifact, which gets no ``PYTHONPATH`` pointing at the checkout."""


class DaemonError(Exception):
    """A JSON-RPC error response; tests branch on ``reason`` like real clients do."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')} {error.get('data', {}).get('reason')}: {error.get('message')}")
        self.code: int = error["code"]
        self.data: dict[str, Any] = error.get("data") or {}
        self.reason: str | None = self.data.get("reason")
        self.message: str = error.get("message", "")


class JsonLinesClient:
    """Speaks the daemon protocol over a pair of byte streams."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(1)
        self._messages: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self.eof = False
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self._reader:
            try:
                message = json.loads(line)
            except ValueError:
                message = {"__unparsable__": line.decode(errors="replace")}
            with self._cond:
                self._messages.append(message)
                self._cond.notify_all()
        with self._cond:
            self.eof = True
            self._cond.notify_all()

    def join(self, timeout: float = 10.0) -> None:
        """Wait for the reader thread to see end of input."""
        self._thread.join(timeout)

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def send_raw(self, data: bytes) -> None:
        self._writer.write(data)
        self._writer.flush()

    def start_request(self, method: str, params: Any = None, request_id: Any = None) -> Any:
        request_id = next(self._ids) if request_id is None else request_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return request_id

    def wait_for(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = DEFAULT_TIMEOUT, consume: bool = True
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for index, message in enumerate(self._messages):
                    if predicate(message):
                        if consume:
                            del self._messages[index]
                        return message
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise TimeoutError(f"no matching message within {timeout}s (eof={self.eof})")
                self._cond.wait(remaining)

    def wait_response(self, request_id: Any, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        return self.wait_for(
            lambda m: m.get("id") == request_id and ("result" in m or "error" in m) and "method" not in m, timeout
        )

    def request(self, method: str, params: Any = None, timeout: float = DEFAULT_TIMEOUT) -> Any:
        """Send a request and return its result, raising DaemonError on an error response."""
        response = self.wait_response(self.start_request(method, params), timeout)
        if "error" in response:
            raise DaemonError(response["error"])
        return response["result"]

    def wait_notification(
        self,
        method: str,
        where: Callable[[dict[str, Any]], bool] = lambda _: True,
        timeout: float = DEFAULT_TIMEOUT,
        consume: bool = True,
    ) -> dict[str, Any]:
        message = self.wait_for(
            lambda m: m.get("method") == method and "id" not in m and where(m["params"]), timeout, consume
        )
        return message["params"]

    def notifications(self, method: str) -> list[dict[str, Any]]:
        """Notifications of ``method`` received so far (not consumed)."""
        with self._cond:
            return [m["params"] for m in self._messages if m.get("method") == method and "id" not in m]

    def wait_server_request(self, method: str, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        return self.wait_for(lambda m: m.get("method") == method and "id" in m, timeout)

    def answer(self, request_id: Any, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def initialize(self, **capabilities: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"clientInfo": {"name": "tests", "version": "0"}}
        if capabilities:
            params["capabilities"] = capabilities
        result = self.request("initialize", params)
        self.notify("initialized")
        return result


class Daemon(JsonLinesClient):
    """The real daemon as a subprocess."""

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> None:
        artifact = os.environ.get(DAEMON_COMMAND_ENV)
        command = json.loads(artifact) if artifact else [sys.executable, "-m", "app_server"]
        base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} if artifact else {
            **os.environ, "PYTHONPATH": str(ROOT)}
        full_env = {**base, **(env or {})}
        self.stderr_path = data_dir.parent / f"{data_dir.name}.stderr.log"
        self._stderr = self.stderr_path.open("wb")
        self.process = subprocess.Popen(
            [*command, "--data-dir", str(data_dir), "--log-level", "debug", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=full_env,
            cwd=ROOT,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        super().__init__(self.process.stdout, self.process.stdin)

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def close(self, timeout: float = 15.0) -> int:
        """Close stdin (EOF) and wait for the exit code."""
        if self.process.stdin and not self.process.stdin.closed:
            try:
                self.process.stdin.close()
            except BrokenPipeError:
                pass
        try:
            return self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self._stderr.close()


@contextmanager
def running_daemon(data_dir: Path, env: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> Iterator[Daemon]:
    daemon = Daemon(data_dir, env, args)
    try:
        yield daemon
    finally:
        daemon.close()


@contextmanager
def unix_client(path: Path) -> Iterator[JsonLinesClient]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(path))
    reader, writer = sock.makefile("rb"), sock.makefile("wb")
    client = JsonLinesClient(reader, writer)
    try:
        yield client
    finally:
        sock.shutdown(socket.SHUT_RDWR)
        client.join()
        writer.close()
        reader.close()
        sock.close()
