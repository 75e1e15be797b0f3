"""Daemon start-to-``initialize`` time and ``mcpServer/list`` round trip, next to a bare echo loop.

Budgets (SPEC §8): start ≤ 150 ms median; round trip ≤ 2x the echo loop measured in the same run.
Run: ``.venv/bin/python -m bench.dispatch [--calls 2000] [--starts 20] [--json]``.
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

ROOT = Path(__file__).resolve().parent.parent
INITIALIZE = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientInfo":{"name":"bench","version":"0"}}}\n'


def _spawn(command: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _daemon_command(data_dir: str) -> list[str]:
    return [sys.executable, "-m", "app_server", "--data-dir", data_dir, "--log-level", "warning"]


def _echo_command() -> list[str]:
    return [sys.executable, str(ROOT / "bench" / "echo_server.py")]


def time_to_initialize(command: list[str]) -> float:
    """Seconds from spawn until the initialize response line arrives."""
    start = time.perf_counter()
    process = _spawn(command)
    assert process.stdin and process.stdout
    process.stdin.write(INITIALIZE)
    process.stdin.flush()
    process.stdout.readline()
    elapsed = time.perf_counter() - start
    process.stdin.close()
    process.wait()
    return elapsed


def round_trips(command: list[str], calls: int) -> list[float]:
    """Sequential ``mcpServer/list`` round trips (each waits for its answer)."""
    process = _spawn(command)
    assert process.stdin and process.stdout
    process.stdin.write(INITIALIZE)
    process.stdin.flush()
    process.stdout.readline()
    process.stdin.write(b'{"jsonrpc":"2.0","method":"initialized"}\n')
    samples = []
    for i in range(calls + 50):
        line = b'{"jsonrpc":"2.0","id":%d,"method":"mcpServer/list","params":{}}\n' % (i + 1)
        start = time.perf_counter()
        process.stdin.write(line)
        process.stdin.flush()
        process.stdout.readline()
        if i >= 50:
            samples.append(time.perf_counter() - start)
    process.stdin.close()
    process.wait()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        daemon = _daemon_command(data_dir)
        time_to_initialize(daemon)
        starts = [time_to_initialize(daemon) for _ in range(args.starts)]
        echo_starts = [time_to_initialize(_echo_command()) for _ in range(args.starts)]
        rtt = statistics.median(round_trips(daemon, args.calls))
        echo_rtt = statistics.median(round_trips(_echo_command(), args.calls))
        asyncio_rtt = statistics.median(round_trips([*_echo_command(), "--asyncio"], args.calls))
    report = {
        "start_to_initialize_ms": round(statistics.median(starts) * 1000, 1),
        "echo_start_ms": round(statistics.median(echo_starts) * 1000, 1),
        "start_budget_ms": 150,
        "list_round_trip_us": round(rtt * 1e6, 1),
        "echo_round_trip_us": round(echo_rtt * 1e6, 1),
        "round_trip_ratio": round(rtt / echo_rtt, 2),
        "asyncio_echo_round_trip_us": round(asyncio_rtt * 1e6, 1),
        "round_trip_budget_ratio": 2.0,
    }
    if args.json:
        print(json.dumps(report))
        return
    print(f"start → initialize   daemon {report['start_to_initialize_ms']:7.1f} ms   "
          f"(bare python echo {report['echo_start_ms']} ms; budget ≤ 150 ms)")
    print(f"mcpServer/list RTT   daemon {report['list_round_trip_us']:7.1f} µs   "
          f"echo {report['echo_round_trip_us']} µs   ratio {report['round_trip_ratio']} (budget ≤ 2.0)")
    print(f"                     (the same echo on asyncio pipes, the floor of an asyncio daemon: "
          f"{report['asyncio_echo_round_trip_us']} µs)")


if __name__ == "__main__":
    main()
