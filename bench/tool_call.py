"""``mcpServer/tool/call`` through the daemon vs its floor and the direct SDK call, in the same run (SPEC §8).

Three sides call the same tool on the same kind of stdio server: the SDK client directly (in this process), the
floor (``bench/frontend_floor.py``: a minimal asyncio JSON-lines front end forwarding through the SDK client) and
the daemon. Budgets: daemon median ≤ 1.1x the floor's; daemon CPU ≤ 700 µs per call; ≥ 1,500 calls/s with 128
calls in flight. Run: ``.venv/bin/python -m bench.tool_call [--server fixture|everything] [--calls 1000] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from typing import Any

from bench.pipe import ROOT, JsonPipe, daemon_command, encode

FIXTURE = [sys.executable, str(ROOT / "scripts" / "smoke" / "fixtures" / "fixture_server.py")]
EVERYTHING = ["node", str(ROOT / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"),
              "stdio"]
SERVERS: dict[str, tuple[list[str], str]] = {
    "fixture": (FIXTURE, "text"),  # our SDK fixture (Python), tool echo(text)
    "everything": (EVERYTHING, "message"),  # npm server-everything (Node), tool echo(message)
}
WARMUP = 50
LATENCY_BUDGET = 1.1
CPU_BUDGET_US = 700.0
THROUGHPUT_BUDGET = 1500.0
ROUNDS = 3


def _call_line(request_id: int, thread_id: str, argument: str) -> bytes:
    params = {"threadId": thread_id, "server": "fx", "tool": "echo", "arguments": {argument: "hello"}}
    return encode(request_id, "mcpServer/tool/call", params)


class _Side:
    """One process under test (the floor or the daemon) with a thread whose server is ready."""

    def __init__(self, command: list[str], server: str) -> None:
        server_command, self.argument = SERVERS[server]
        self.pipe = JsonPipe(command)
        self.pipe.initialize()
        config = {"command": server_command[0], "args": server_command[1:]}
        thread = self.pipe.request("t", "thread/start", {"mcpServers": {"fx": config}})
        self.thread_id = thread.get("thread", {}).get("id", "floor")
        for i in range(-WARMUP, 0):  # the first waits for the server to be ready
            self.call(i)
        self.samples: list[float] = []
        self.cpu = 0.0
        self.pipelined_s = 0.0
        self.pipelined_cpu = 0.0
        self.pipelined_calls = 0

    def call(self, request_id: int) -> float:
        line = _call_line(request_id, self.thread_id, self.argument)
        started = time.perf_counter()
        self.pipe.write(line)
        self.pipe.response(request_id)
        return time.perf_counter() - started


def _paired(sides: list[_Side], calls: int) -> None:
    """Sequential calls, alternating between the sides call by call, so that both meet the same machine
    (this box's speed drifts by tens of percent within a minute); CPU is read over the same window."""
    cpu = [side.pipe.cpu_seconds() for side in sides]
    for i in range(calls):
        for side in sides:
            side.samples.append(side.call(i))
    for side, before in zip(sides, cpu, strict=True):
        side.cpu = (side.pipe.cpu_seconds() - before) / calls


def _pipelined(side: _Side, calls: int, window: int) -> None:
    """``calls`` calls with ``window`` in flight (the daemon admits 256 per connection); adds to the side's
    total pipelined time."""
    pipe = side.pipe
    base = 1_000_000 + side.pipelined_calls
    started, cpu = time.perf_counter(), pipe.cpu_seconds()
    first = min(window, calls)
    pipe.write(b"".join(_call_line(base + i, side.thread_id, side.argument) for i in range(first)))
    sent, answered = first, 0
    while answered < calls:
        message = json.loads(pipe.stdout.readline())
        if "id" not in message or "method" in message:
            continue
        if "error" in message:
            raise RuntimeError(f"pipelined call failed: {message['error']}")
        answered += 1
        if sent < calls:
            pipe.write(_call_line(base + sent, side.thread_id, side.argument))
            sent += 1
    side.pipelined_s += time.perf_counter() - started
    side.pipelined_cpu += pipe.cpu_seconds() - cpu
    side.pipelined_calls += calls


def through_both(commands: list[list[str]], server: str, calls: int, pipelined: int, window: int) -> list[_Side]:
    """The floor and the daemon measured side by side: paired sequential calls, then pipelined rounds taken
    in turns (ROUNDS each), so that a drift of the machine's speed hits both alike."""
    sides = [_Side(command, server) for command in commands]
    try:
        _paired(sides, calls)
        for _ in range(ROUNDS):
            for side in sides:
                _pipelined(side, pipelined // ROUNDS, window)
    finally:
        for side in sides:
            side.pipe.close()
    return sides


def direct_sdk(server: str, calls: int, pipelined: int, window: int) -> dict[str, float]:
    """The same calls made directly with the SDK client in this process (sequential, then windowed)."""
    import anyio
    from mcp import Client, StdioServerParameters

    command, argument = SERVERS[server]

    async def run() -> dict[str, float]:
        params = StdioServerParameters(command=command[0], args=command[1:])
        async with Client(params, mode="auto", read_timeout_seconds=30) as client:
            samples: list[float] = []
            for i in range(calls + WARMUP):
                started = time.perf_counter()
                await client.call_tool("echo", {argument: "hello"})
                if i >= WARMUP:
                    samples.append(time.perf_counter() - started)
            limiter = anyio.Semaphore(window)

            async def one() -> None:
                async with limiter:
                    await client.call_tool("echo", {argument: "pipelined"})

            started = time.perf_counter()
            async with anyio.create_task_group() as tasks:
                for _ in range(pipelined):
                    tasks.start_soon(one)
            throughput = pipelined / (time.perf_counter() - started)
            return {"median_us": statistics.median(samples) * 1e6, "calls_per_s": throughput}

    return anyio.run(run)


def measure(server: str, calls: int, pipelined: int, window: int) -> dict[str, Any]:
    direct = direct_sdk(server, calls, pipelined, window)
    floor_command = [sys.executable, str(ROOT / "bench" / "frontend_floor.py"), "--", *SERVERS[server][0]]
    with tempfile.TemporaryDirectory() as data_dir:
        floor, daemon = through_both([floor_command, daemon_command(data_dir)], server, calls, pipelined, window)
    daemon_median = statistics.median(daemon.samples) * 1e6
    floor_median = statistics.median(floor.samples) * 1e6
    return {
        "server": server,
        "calls": calls,
        "daemon_median_us": round(daemon_median, 1),
        "floor_median_us": round(floor_median, 1),
        "direct_sdk_median_us": round(direct["median_us"], 1),
        "floor_ratio": round(daemon_median / floor_median, 2),
        "floor_budget_ratio": LATENCY_BUDGET,
        "direct_ratio": round(daemon_median / direct["median_us"], 2),
        "daemon_cpu_us": round(daemon.cpu * 1e6, 1),
        "floor_cpu_us": round(floor.cpu * 1e6, 1),
        "cpu_budget_us": CPU_BUDGET_US,
        "pipelined_window": window,
        "daemon_pipelined_cpu_us": round(daemon.pipelined_cpu / daemon.pipelined_calls * 1e6, 1),
        "floor_pipelined_cpu_us": round(floor.pipelined_cpu / floor.pipelined_calls * 1e6, 1),
        "daemon_calls_per_s": round(daemon.pipelined_calls / daemon.pipelined_s),
        "floor_calls_per_s": round(floor.pipelined_calls / floor.pipelined_s),
        "direct_sdk_calls_per_s": round(direct["calls_per_s"]),
        "throughput_budget_calls_per_s": THROUGHPUT_BUDGET,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--pipelined", type=int, default=3000)
    parser.add_argument("--window", type=int, default=128)
    parser.add_argument("--server", choices=sorted(SERVERS), default="fixture")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    r = measure(args.server, args.calls, args.pipelined, args.window)
    if args.json:
        print(json.dumps(r))
        return
    print(f"tool/call median   daemon {r['daemon_median_us']:7.1f} µs   floor {r['floor_median_us']:7.1f} µs   "
          f"direct SDK {r['direct_sdk_median_us']:7.1f} µs   ratio to floor {r['floor_ratio']} "
          f"(budget ≤ {LATENCY_BUDGET})")
    print(f"CPU per call       daemon {r['daemon_cpu_us']:7.1f} µs   floor {r['floor_cpu_us']:7.1f} µs   "
          f"(budget ≤ {CPU_BUDGET_US:.0f} µs); {args.window} in flight: daemon {r['daemon_pipelined_cpu_us']} µs, "
          f"floor {r['floor_pipelined_cpu_us']} µs")
    print(f"{args.window} in flight     daemon {r['daemon_calls_per_s']} calls/s   floor {r['floor_calls_per_s']}   "
          f"direct SDK {r['direct_sdk_calls_per_s']} (budget ≥ {THROUGHPUT_BUDGET:.0f})")


if __name__ == "__main__":
    main()
