"""Start-up and ``mcpServer/list`` round trip of the daemon, next to a minimal asyncio JSON-lines echo (SPEC §8).

Budgets: spawn → first ``mcpServer/list`` answered (after ``initialize``) ≤ 1.5x the echo's; ``initialize`` no slower
than the echo's; ``mcpServer/list`` round trip ≤ 1.3x the echo's. Both measured in the same run.
Run: ``.venv/bin/python -m bench.dispatch [--calls 2000] [--starts 20] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Mapping
from typing import Any

from bench.pipe import JsonPipe, daemon_command, echo_command, encode

START_BUDGET = 1.5
ROUND_TRIP_BUDGET = 1.3
WARMUP = 50


def start_times(command: list[str], env: Mapping[str, str] | None = None) -> tuple[float, float]:
    """Seconds from spawn until ``initialize`` is answered, and until the first ``mcpServer/list`` is."""
    started = time.perf_counter()
    with JsonPipe(command, env) as pipe:
        pipe.initialize()
        initialized = time.perf_counter() - started
        pipe.request(1, "mcpServer/list", {})
        listed = time.perf_counter() - started
    return initialized, listed


def round_trips(command: list[str], calls: int) -> list[float]:
    """Sequential ``mcpServer/list`` round trips (each waits for its answer)."""
    samples = []
    with JsonPipe(command) as pipe:
        pipe.initialize()
        # Only the event loop answers thread/list: the round trip is timed on the running daemon, not on the
        # start-up reader that serves an empty-store list while the daemon still imports (SPEC §8's first row).
        pipe.request(0, "thread/list", {})
        for i in range(calls + WARMUP):
            line = encode(i + 1, "mcpServer/list", {})
            started = time.perf_counter()
            pipe.write(line)
            pipe.response(i + 1)
            if i >= WARMUP:
                samples.append(time.perf_counter() - started)
    return samples


def _median_starts(command: list[str], starts: int) -> tuple[float, float]:
    start_times(command)  # warm the page cache
    samples = [start_times(command) for _ in range(starts)]
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def measure(calls: int, starts: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as data_dir:
        daemon = daemon_command(data_dir)
        init, first_list = _median_starts(daemon, starts)
        echo_init, echo_first = _median_starts(echo_command(), starts)
        rtt = statistics.median(round_trips(daemon, calls))
        echo_rtt = statistics.median(round_trips(echo_command(), calls))
    return {
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
          f"   ratio {report['first_list_ratio']} (budget ≤ {START_BUDGET})")
    print(f"mcpServer/list RTT        daemon {report['list_round_trip_us']:7.1f} µs   echo "
          f"{report['echo_round_trip_us']} µs   ratio {report['round_trip_ratio']} (budget ≤ {ROUND_TRIP_BUDGET})")


if __name__ == "__main__":
    main()
