"""A small JSON-lines client that drives the real daemon as a subprocess (or over its Unix socket).

Messages are read by a background thread into a list guarded by a condition, so tests wait for a
specific response, notification or server request with a bounded timeout instead of sleeping. Every message read
is checked against the published JSON Schema (a response against its method's result, remembered by id), and a
message that does not conform fails the test that waits next, and at the latest the one that closes the client.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import jsonschema_rs

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TIMEOUT = 20.0
DAEMON_COMMAND_ENV = "MCP_APP_SERVER_TEST_DAEMON"
"""A JSON argv that replaces the checkout's daemon (an installed wheel's script, the bundle): the same checks then
run against the shipped artifact, which gets no ``PYTHONPATH`` pointing at the checkout."""
BUNDLE = ROOT / "schemas" / "protocol.schema.json"


class Conformance:
    """The published schema's validators, each compiled once (per process) for the type it checks."""

    def __init__(self, bundle: dict[str, Any]) -> None:
        self._defs = bundle["$defs"]
        tables = bundle["properties"]
        pairs = tables["methods"]["properties"]
        self.results = {method: pair["properties"]["result"]["$ref"] for method, pair in pairs.items()}
        requests = tables["serverRequests"]["properties"]
        self.server_requests = {method: pair["properties"]["params"]["$ref"] for method, pair in requests.items()}
        self.notifications = {method: ref["$ref"] for method, ref in tables["notifications"]["properties"].items()}
        error_member = tables["envelopes"]["properties"]["errorResponse"]["$ref"]
        self.error = self._compile({"$ref": error_member})
        self.codes = {reason: schema["const"] for reason, schema in tables["errorCodes"]["properties"].items()}

    def _compile(self, schema: dict[str, Any]) -> Any:
        return jsonschema_rs.validator_for({**schema, "$defs": self._defs}, validate_formats=False, offline=True)

    @functools.cache  # noqa: B019  (one instance per process, kept for its life)
    def of(self, ref: str) -> Any:
        return self._compile({"$ref": ref})

    def problem(self, message: dict[str, Any], method_of: Callable[[Any], str | None]) -> str | None:
        """Why ``message`` (as the daemon sent it) is not what the schema publishes, or None."""
        if "__unparsable__" in message:
            return f"not a JSON line: {message['__unparsable__'][:200]!r}"
        if message.get("jsonrpc") != "2.0":
            return "no jsonrpc 2.0"
        method = message.get("method")
        if method is not None:
            table = self.server_requests if "id" in message else self.notifications
            if method not in table:
                return f"{method} is not a published {'server request' if 'id' in message else 'notification'}"
            return self._check(table[method], message.get("params"), method)
        if "id" not in message or ("result" in message) == ("error" in message):
            return "a response needs an id and exactly one of result and error"
        sent = method_of(message["id"])
        if "error" in message:
            if problem := self._errors(self.error, message, "error response"):
                return problem
            error = message["error"]
            code = self.codes[error["data"]["reason"]]
            reason = error["data"]["reason"]
            return None if error["code"] == code else f"error code {error['code']} with reason {reason}"
        if sent is None:
            return f"a result for id {message['id']!r}, which no request sent here used"
        return self._check(self.results[sent], message["result"], f"{sent} result")

    def _check(self, ref: str, instance: Any, what: str) -> str | None:
        return self._errors(self.of(ref), instance, f"{what} ({ref.removeprefix('#/$defs/')})")

    @staticmethod
    def _errors(validator: Any, instance: Any, what: str) -> str | None:
        if validator.is_valid(instance):
            return None
        found = [f"{'/'.join(map(str, e.instance_path)) or '(root)'}: {e.message[:300]}"
                 for e in validator.iter_errors(instance)][:5]  # fmt: skip
        return f"{what} does not conform: " + "; ".join(found)


@functools.cache
def conformance() -> Conformance:
    return Conformance(json.loads(BUNDLE.read_text()))


class NonConforming(AssertionError):
    """The daemon sent a message the published schema does not allow."""


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
        self._sent: defaultdict[tuple[str, Any], deque[str]] = defaultdict(deque)
        self.nonconforming: list[str] = []
        self.eof = False
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        checks = conformance()
        for line in self._reader:
            try:
                message = json.loads(line)
            except ValueError:
                message = {"__unparsable__": line.decode(errors="replace")}
            with self._cond:
                problem = checks.problem(message, self._method_of)
                if problem is not None:
                    self.nonconforming.append(problem)
                self._messages.append(message)
                self._cond.notify_all()
        with self._cond:
            self.eof = True
            self._cond.notify_all()

    @staticmethod
    def _key(request_id: Any) -> tuple[str, Any] | None:
        """Ids as the daemon tells them apart (``1`` is not ``"1"``, nor ``true``); None for one it refuses."""
        valid = isinstance(request_id, str) or type(request_id) is int
        return (type(request_id).__name__, request_id) if valid else None

    def _method_of(self, request_id: Any) -> str | None:
        """The method of the oldest request sent with this id and not yet answered (called under the lock)."""
        sent = self._sent.get(self._key(request_id))
        return sent.popleft() if sent else None

    def _remember(self, data: bytes) -> None:
        """The method of every request in ``data``, by id, for checking its result."""
        for line in data.splitlines():
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(message, dict) and isinstance(message.get("method"), str):
                key = self._key(message.get("id"))
                if key is not None:
                    with self._cond:
                        self._sent[key].append(message["method"])

    def assert_conforming(self) -> None:
        """Raise if the daemon has sent anything the published schema does not allow."""
        with self._cond:
            problems = list(self.nonconforming)
        if problems:
            raise NonConforming("\n".join(["the daemon sent messages that do not conform:", *problems[:10]]))

    def join(self, timeout: float = 10.0) -> None:
        """Wait for the reader thread to see end of input."""
        self._thread.join(timeout)

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def send_raw(self, data: bytes) -> None:
        self._remember(data)
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
                if self.nonconforming:
                    raise NonConforming("\n".join(["the daemon sent messages that do not conform:",
                                                    *self.nonconforming[:10]]))  # fmt: skip
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

    def __init__(
        self,
        data_dir: Path,
        env: dict[str, str] | None = None,
        args: tuple[str, ...] = (),
        prefix: tuple[str, ...] = (),
    ) -> None:
        """``prefix``: argv run in front of the daemon's (``descriptor_limit``, say)."""
        artifact = os.environ.get(DAEMON_COMMAND_ENV)
        command = [*prefix, *(json.loads(artifact) if artifact else [sys.executable, "-m", "app_server"])]
        base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} if artifact else {
            **os.environ, "PYTHONPATH": str(ROOT)}
        base.pop("DBUS_SESSION_BUS_ADDRESS", None)  # never the user's keychain: a test passes its own Secret Service
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
            code = self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self._stderr.close()
        self.join()
        self.assert_conforming()
        return code


@contextmanager
def running_daemon(
    data_dir: Path, env: dict[str, str] | None = None, args: tuple[str, ...] = (), prefix: tuple[str, ...] = ()
) -> Iterator[Daemon]:
    daemon = Daemon(data_dir, env, args, prefix)
    try:
        yield daemon
    finally:
        daemon.close()


def store_servers(data_dir: Path, configs: dict[str, dict[str, Any]]) -> None:
    """Create ``configs`` in ``data_dir`` through a daemon of their own, as a host did in an earlier launch."""
    with running_daemon(data_dir) as first:
        first.initialize()
        for name, config in configs.items():
            first.request("mcpServer/create", {"name": name, "config": config})


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
    client.assert_conforming()


def descriptor_limit(soft: int, hard: int) -> tuple[str, ...]:
    """A ``prefix`` that starts the daemon with this ``RLIMIT_NOFILE``, as a GUI app's launcher would."""
    code = "import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), int(sys.argv[2])))"
    return (sys.executable, "-c", f"{code}; os.execvp(sys.argv[3], sys.argv[3:])", str(soft), str(hard))
