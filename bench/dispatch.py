"""Start-up and ``mcpServer/list`` round trip of the daemon, next to a minimal asyncio JSON-lines echo (SPEC §8).

Start-up is measured on a user's data dir: a store of 8 enabled stdio servers, which the daemon starts after
``initialized`` while the host waits for its first list. Budgets: spawn → first ``mcpServer/list`` ≤ 3.5x the
echo's; ``initialize`` no slower than the echo's; ``mcpServer/list`` round trip ≤ 1.3x the echo's.
Run: ``.venv/bin/python -m bench.dispatch [--calls 2000] [--starts 15] [--json]``.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.pipe import ROOT, JsonPipe, daemon_command, echo_command, encode
from bench.tool_call import EVERYTHING, FIXTURE

START_BUDGET = 3.5
ROUND_TRIP_BUDGET = 1.3
WARMUP = 50
STORED_SERVERS = 8


def stored_servers() -> dict[str, dict[str, Any]]:
    """A store as a user has one: SDK fixture servers and npm server-everything, with args, env and descriptions."""
    servers: dict[str, dict[str, Any]] = {}
    for i in range(STORED_SERVERS):
        command = FIXTURE if i % 2 == 0 else EVERYTHING
        servers[f"server-{i}"] = {
            "command": command[0],
            "args": [*command[1:], *(["--extra-tools", str(8 * i)] if i % 2 == 0 else [])],
            "env": {"LOG_LEVEL": "warning", "SERVER_INDEX": str(i)},
            "description": f"bench server {i}: {'the SDK fixture' if i % 2 == 0 else 'server-everything'}",
            "startupTimeoutMs": 60_000,
        }
    return servers


def fill_store(data_dir: str | Path) -> None:
    """Create the servers through the daemon itself, as a settings page would."""
    with JsonPipe(daemon_command(data_dir)) as pipe:
        pipe.initialize()
        for name, config in stored_servers().items():
            pipe.request(name, "mcpServer/create", {"name": name, "config": config})


def start_times(command: list[str], env: Mapping[str, str] | None = None) -> tuple[float, float]:
    """Seconds from spawn until ``initialize`` is answered, and until the first ``mcpServer/list`` is."""
    started = time.perf_counter()
    with JsonPipe(command, env) as pipe:
        pipe.initialize()
        initialized = time.perf_counter() - started
        pipe.request(1, "mcpServer/list", {})
        listed = time.perf_counter() - started
    return initialized, listed


def round_trips(commands: list[list[str]], calls: int) -> list[list[float]]:
    """Sequential ``mcpServer/list`` round trips (each waits for its answer) to each command's process; the
    processes take turns call by call, so a drift of the machine's speed weighs on each alike."""
    samples: list[list[float]] = [[] for _ in commands]
    with contextlib.ExitStack() as stack:
        pipes = [stack.enter_context(JsonPipe(command)) for command in commands]
        for pipe in pipes:
            pipe.initialize()
        for i in range(calls + WARMUP):
            line = encode(i + 1, "mcpServer/list", {})
            for pipe, taken in zip(pipes, samples, strict=True):
                started = time.perf_counter()
                pipe.write(line)
                pipe.response(i + 1)
                if i >= WARMUP:
                    taken.append(time.perf_counter() - started)
    return samples


def _median_starts(commands: list[list[str]], starts: int) -> list[tuple[float, float]]:
    """Median start times of each command; the commands take turns, so a drift of the machine's speed during
    the run weighs on each alike."""
    for command in commands:
        start_times(command)  # warm the page cache
    samples = [[start_times(command) for command in commands] for _ in range(starts)]
    return [
        (statistics.median(run[i][0] for run in samples), statistics.median(run[i][1] for run in samples))
        for i in range(len(commands))
    ]


def compile_bytecode() -> None:
    """The daemon as installed: an install compiles its bytecode, a checkout may not have it (or have it stale,
    or ``PYTHONDONTWRITEBYTECODE`` set), and compiling at every start is not the daemon's start-up."""
    for package in ("protocol", "app_server", "mcp_runtime"):
        compileall.compile_dir(ROOT / package, quiet=1)


def measure(calls: int, starts: int) -> dict[str, Any]:
    compile_bytecode()
    with tempfile.TemporaryDirectory() as populated, tempfile.TemporaryDirectory() as empty:
        fill_store(populated)
        daemon, echo = _median_starts([daemon_command(populated), echo_command()], starts)
        (init, first_list), (echo_init, echo_first) = daemon, echo
        rtt, echo_rtt = map(statistics.median, round_trips([daemon_command(empty), echo_command()], calls))
    return {
        "stored_servers": STORED_SERVERS,
        "initialize_ms": round(init * 1000, 1),
        "echo_initialize_ms": round(echo_init * 1000, 1),
        "first_list_ms": round(first_list * 1000, 1),
        "echo_first_list_ms": round(echo_first * 1000, 1),
        "first_list_ratio": round(first_list / echo_first, 2),
        "first_list_budget_ratio": START_BUDGET,
        "list_round_trip_us": round(rtt * 1e6, 1),
        "echo_round_trip_us": round(echo_rtt * 1e6, 1),
        "round_trip_ratio": round(rtt / echo_rtt, 2),
        "round_trip_budget_ratio": ROUND_TRIP_BUDGET,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--starts", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = measure(args.calls, args.starts)
    if args.json:
        print(json.dumps(report))
        return
    print(f"spawn → initialize        daemon {report['initialize_ms']:7.1f} ms   "
          f"echo {report['echo_initialize_ms']} ms")
    print(f"spawn → first list        daemon {report['first_list_ms']:7.1f} ms   echo {report['echo_first_list_ms']} ms"
          f"   ratio {report['first_list_ratio']} (budget ≤ {START_BUDGET}; {STORED_SERVERS} servers in the store)")
    print(f"mcpServer/list RTT        daemon {report['list_round_trip_us']:7.1f} µs   echo "
          f"{report['echo_round_trip_us']} µs   ratio {report['round_trip_ratio']} (budget ≤ {ROUND_TRIP_BUDGET})")


if __name__ == "__main__":
    main()
