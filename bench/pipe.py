"""A benchmark client: a process driven over stdin/stdout with JSON lines, read through a buffered pipe.

The client side costs as little as possible (SPEC §8: a raw pipe's per-byte ``readline()`` would be client
time, not daemon time), and the process's own CPU time and RSS are read from ``/proc``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
INITIALIZE = {"clientInfo": {"name": "bench", "version": "0"}}


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process itself (not its children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def daemon_command(data_dir: str | Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "app_server", "--data-dir", str(data_dir), "--log-level", "warning", *args]


def echo_command() -> list[str]:
    """The floor of an asyncio daemon: a few lines that answer each line on asyncio pipes."""
    return [sys.executable, str(ROOT / "bench" / "echo_server.py"), "--asyncio"]


def encode(request_id: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


class JsonPipe:
    """One child process speaking JSON lines; responses are matched by id, everything else is skipped."""

    def __init__(self, command: list[str], env: Mapping[str, str] | None = None) -> None:
        """``env`` replaces the default (ours with the checkout on ``PYTHONPATH``), e.g. for an installed artifact."""
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)} if env is None else dict(env),
            bufsize=1 << 16,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin = self.process.stdin
        self.stdout = self.process.stdout

    def write(self, data: bytes) -> None:
        self.stdin.write(data)
        self.stdin.flush()

    def response(self, request_id: Any) -> dict[str, Any]:
        while True:
            line = self.stdout.readline()
            if not line:
                raise RuntimeError("the process exited")
            message: dict[str, Any] = json.loads(line)
            if "method" in message or message.get("id") != request_id:
                continue
            if "error" in message:
                raise RuntimeError(f"error answer: {message['error']}")
            return message

    def request(self, request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.write(encode(request_id, method, params))
        return self.response(request_id)["result"]

    def initialize(self) -> dict[str, Any]:
        result = self.request("init", "initialize", INITIALIZE)
        self.write(b'{"jsonrpc":"2.0","method":"initialized"}\n')
        return result

    def cpu_seconds(self) -> float:
        """User + system CPU of the process itself (not its children)."""
        return cpu_seconds(self.process.pid)

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        try:
            self.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> JsonPipe:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:
            self.process.kill()
        self.close()
