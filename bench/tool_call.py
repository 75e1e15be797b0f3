"""``mcpServer/tool/call`` echo through the daemon vs the same call made directly with the MCP SDK.

Both sides talk to the same fixture stdio server (``scripts/smoke/fixtures/fixture_server.py``, protocol auto),
in the same run. Budgets (SPEC §8): median latency ≤ 1.6 times the direct SDK call; ≥ 1,000 calls/s pipelined.
Run: ``.venv/bin/python -m bench.tool_call [--server fixture|everything] [--calls 1000] [--pipelined 2000] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = [sys.executable, str(ROOT / "scripts" / "smoke" / "fixtures" / "fixture_server.py")]
EVERYTHING = ["node", str(ROOT / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"),
              "stdio"]
SERVERS: dict[str, tuple[list[str], str]] = {
    "fixture": (FIXTURE, "text"),  # our SDK fixture (Python), tool echo(text)
    "everything": (EVERYTHING, "message"),  # npm server-everything (Node), tool echo(message)
}
WARMUP = 50
LATENCY_BUDGET = 1.6
THROUGHPUT_BUDGET = 1000.0


class DaemonPipe:
    """The daemon on stdio, driven with raw JSON lines (the client side costs as little as possible)."""

    def __init__(self, data_dir: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app_server", "--data-dir", data_dir, "--log-level", "warning"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin = self.process.stdin
        self.stdout = self.process.stdout

    def send(self, message: dict[str, Any]) -> None:
        self.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self.stdin.flush()

    def response(self, request_id: Any) -> dict[str, Any]:
        while True:
            line = self.stdout.readline()
            if not line:
                raise RuntimeError("the daemon exited")
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"daemon error: {message['error']}")
                return message

    def request(self, request_id: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return self.response(request_id)

    def close(self) -> None:
        self.stdin.close()
        self.process.wait(30)


def _call_line(request_id: int, thread_id: str, text: str, argument: str) -> bytes:
    params = {"threadId": thread_id, "server": "fx", "tool": "echo", "arguments": {argument: text}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "mcpServer/tool/call", "params": params},
                      separators=(",", ":")).encode() + b"\n"


def through_daemon(server: str, calls: int, pipelined: int, window: int) -> tuple[list[float], float]:
    command, argument = SERVERS[server]
    with tempfile.TemporaryDirectory() as data_dir:
        daemon = DaemonPipe(data_dir)
        try:
            daemon.request(0, "initialize", {"clientInfo": {"name": "bench", "version": "0"}})
            daemon.send({"jsonrpc": "2.0", "method": "initialized"})
            config = {"command": command[0], "args": command[1:]}
            thread = daemon.request("t", "thread/start", {"mcpServers": {"fx": config}})["result"]["thread"]
            thread_id = thread["id"]
            daemon.request("w", "mcpServer/tool/call",  # waits for the server to be ready
                           {"threadId": thread_id, "server": "fx", "tool": "echo", "arguments": {argument: "w"}})
            samples: list[float] = []
            for i in range(calls + WARMUP):
                line = _call_line(i + 1, thread_id, "hello", argument)
                start = time.perf_counter()
                daemon.stdin.write(line)
                daemon.stdin.flush()
                daemon.response(i + 1)
                if i >= WARMUP:
                    samples.append(time.perf_counter() - start)

            # Pipelined: keep a window of calls in flight without waiting for each answer (the daemon admits
            # at most 256 per connection and answers ``overloaded`` past that, so a client pipelines in a window).
            base = calls + WARMUP + 1
            sent = answered = 0
            start = time.perf_counter()
            first = min(window, pipelined)
            daemon.stdin.write(b"".join(_call_line(base + i, thread_id, "pipelined", argument) for i in range(first)))
            daemon.stdin.flush()
            sent = first
            while answered < pipelined:
                message = json.loads(daemon.stdout.readline())
                if "id" not in message or "method" in message:
                    continue
                if "error" in message:
                    raise RuntimeError(f"pipelined call failed: {message['error']}")
                answered += 1
                if sent < pipelined:
                    daemon.stdin.write(_call_line(base + sent, thread_id, "pipelined", argument))
                    daemon.stdin.flush()
                    sent += 1
            elapsed = time.perf_counter() - start
            return samples, pipelined / elapsed
        except BaseException:
            daemon.process.kill()
            raise
        finally:
            daemon.close()


def direct_sdk(server: str, calls: int, pipelined: int, window: int) -> tuple[list[float], float]:
    """The baseline: the same calls made directly with the SDK client (sequential, then windowed)."""
    import anyio
    from mcp import Client, StdioServerParameters

    command, argument = SERVERS[server]

    async def run() -> tuple[list[float], float]:
        params = StdioServerParameters(command=command[0], args=command[1:])
        async with Client(params, mode="auto", read_timeout_seconds=30) as client:
            samples: list[float] = []
            for i in range(calls + WARMUP):
                start = time.perf_counter()
                await client.call_tool("echo", {argument: "hello"})
                if i >= WARMUP:
                    samples.append(time.perf_counter() - start)
            limiter = anyio.Semaphore(window)

            async def one() -> None:
                async with limiter:
                    await client.call_tool("echo", {argument: "pipelined"})

            start = time.perf_counter()
            async with anyio.create_task_group() as tasks:
                for _ in range(pipelined):
                    tasks.start_soon(one)
            return samples, pipelined / (time.perf_counter() - start)

    return anyio.run(run)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000, help="sequential calls per side (≥ 500)")
    parser.add_argument("--pipelined", type=int, default=2000)
    parser.add_argument("--window", type=int, default=128, help="pipelined calls in flight (the daemon admits 256)")
    parser.add_argument("--server", choices=sorted(SERVERS), default="fixture")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    direct_samples, direct_throughput = direct_sdk(args.server, args.calls, args.pipelined, args.window)
    direct = statistics.median(direct_samples)
    samples, throughput = through_daemon(args.server, args.calls, args.pipelined, args.window)
    daemon = statistics.median(samples)
    report = {
        "server": args.server,
        "calls": args.calls,
        "daemon_median_us": round(daemon * 1e6, 1),
        "direct_sdk_median_us": round(direct * 1e6, 1),
        "latency_ratio": round(daemon / direct, 2),
        "latency_budget_ratio": LATENCY_BUDGET,
        "pipelined_calls": args.pipelined,
        "pipelined_window": args.window,
        "pipelined_calls_per_s": round(throughput, 1),
        "direct_sdk_pipelined_calls_per_s": round(direct_throughput, 1),
        "throughput_budget_calls_per_s": THROUGHPUT_BUDGET,
        "within_budget": daemon / direct <= LATENCY_BUDGET and throughput >= THROUGHPUT_BUDGET,
    }
    if args.json:
        print(json.dumps(report))
        return
    print(f"tool/call echo median  daemon {report['daemon_median_us']:8.1f} µs   direct SDK "
          f"{report['direct_sdk_median_us']:8.1f} µs   ratio {report['latency_ratio']} (budget ≤ {LATENCY_BUDGET})")
    print(f"pipelined              {report['pipelined_calls_per_s']:8.1f} calls/s over {args.pipelined} calls "
          f"(budget ≥ {THROUGHPUT_BUDGET:.0f}; the server itself, direct SDK: "
          f"{report['direct_sdk_pipelined_calls_per_s']:.0f} calls/s)")


if __name__ == "__main__":
    main()
