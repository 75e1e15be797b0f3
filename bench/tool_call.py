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


def _call_line(request_id: int, thread_id: str, argument: str) -> bytes:
    params = {"threadId": thread_id, "server": "fx", "tool": "echo", "arguments": {argument: "hello"}}
    return encode(request_id, "mcpServer/tool/call", params)


def _sequential(pipe: JsonPipe, thread_id: str, argument: str, calls: int) -> tuple[list[float], float]:
    """Median-able latencies, and the process's CPU seconds per call over the measured calls."""
    samples: list[float] = []
    for i in range(WARMUP):
        pipe.write(_call_line(i, thread_id, argument))
        pipe.response(i)
    cpu = pipe.cpu_seconds()
    for i in range(WARMUP, WARMUP + calls):
        line = _call_line(i, thread_id, argument)
        started = time.perf_counter()
        pipe.write(line)
        pipe.response(i)
        samples.append(time.perf_counter() - started)
    return samples, (pipe.cpu_seconds() - cpu) / calls


def _pipelined(pipe: JsonPipe, thread_id: str, argument: str, calls: int, window: int) -> float:
    """Calls per second with ``window`` calls in flight (the daemon admits 256 per connection)."""
    base = 1_000_000
    started = time.perf_counter()
    first = min(window, calls)
    pipe.write(b"".join(_call_line(base + i, thread_id, argument) for i in range(first)))
    sent, answered = first, 0
    while answered < calls:
        message = json.loads(pipe.stdout.readline())
        if "id" not in message or "method" in message:
            continue
        if "error" in message:
            raise RuntimeError(f"pipelined call failed: {message['error']}")
        answered += 1
        if sent < calls:
            pipe.write(_call_line(base + sent, thread_id, argument))
            sent += 1
    return calls / (time.perf_counter() - started)


def through(command: list[str], server: str, calls: int, pipelined: int, window: int) -> dict[str, float]:
    server_command, argument = SERVERS[server]
    with JsonPipe(command) as pipe:
        pipe.initialize()
        config = {"command": server_command[0], "args": server_command[1:]}
        thread = pipe.request("t", "thread/start", {"mcpServers": {"fx": config}})
        thread_id = thread.get("thread", {}).get("id", "floor")
        pipe.write(_call_line(-1, thread_id, argument))  # waits for the server to be ready
        pipe.response(-1)
        samples, cpu = _sequential(pipe, thread_id, argument, calls)
        throughput = _pipelined(pipe, thread_id, argument, pipelined, window)
    return {"median_us": statistics.median(samples) * 1e6, "cpu_us": cpu * 1e6, "calls_per_s": throughput}


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
    floor = through(floor_command, server, calls, pipelined, window)
    with tempfile.TemporaryDirectory() as data_dir:
        daemon = through(daemon_command(data_dir), server, calls, pipelined, window)
    return {
        "server": server,
        "calls": calls,
        "daemon_median_us": round(daemon["median_us"], 1),
        "floor_median_us": round(floor["median_us"], 1),
        "direct_sdk_median_us": round(direct["median_us"], 1),
        "floor_ratio": round(daemon["median_us"] / floor["median_us"], 2),
        "floor_budget_ratio": LATENCY_BUDGET,
        "direct_ratio": round(daemon["median_us"] / direct["median_us"], 2),
        "daemon_cpu_us": round(daemon["cpu_us"], 1),
        "floor_cpu_us": round(floor["cpu_us"], 1),
        "cpu_budget_us": CPU_BUDGET_US,
        "pipelined_window": window,
        "daemon_calls_per_s": round(daemon["calls_per_s"]),
        "floor_calls_per_s": round(floor["calls_per_s"]),
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
          f"(budget ≤ {CPU_BUDGET_US:.0f} µs)")
    print(f"{args.window} in flight     daemon {r['daemon_calls_per_s']} calls/s   floor {r['floor_calls_per_s']}   "
          f"direct SDK {r['direct_sdk_calls_per_s']} (budget ≥ {THROUGHPUT_BUDGET:.0f})")


if __name__ == "__main__":
    main()
