"""Management-side benchmarks through the real daemon (SPEC §8), each against a baseline in the same run.

- ``mcpServerStatus/list`` round trip with 16 connected servers, next to ``mcpServer/list`` (no MCP state);
- ``mcpTool/search`` over 16 x 128 tools through the daemon (budget ≤ 2 ms median);
- 16 servers whose handshake takes 0.5 s, started at once, vs one started alone (budget ≤ 1.5x);
- daemon RSS with 32 connected servers (budget ≤ 150 MiB).

The servers are Streamable HTTP sessions on one SDK fixture process (``--handshake-delay`` delays each
session's handshake), so the numbers measure the daemon rather than 32 Python interpreters competing
for this machine's two cores. Run: ``.venv/bin/python -m bench.management [--json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from scripts.smoke.fixtures.launch import http_fixture
from tests.daemon_client import Daemon, running_daemon

TOOLS_PER_SERVER = 128
FIXTURE_BASE_TOOLS = 11


def _median_us(d: Daemon, method: str, params: dict[str, Any], calls: int) -> float:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        d.request(method, params)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _start_all(d: Daemon, names: list[str]) -> float:
    start = time.perf_counter()
    ids = [d.start_request("mcpServer/start", {"name": n}) for n in names]
    for request_id in ids:
        response = d.wait_response(request_id, 120)
        assert "result" in response, response
    return time.perf_counter() - start


def measure(calls: int) -> dict[str, Any]:
    extra = str(TOOLS_PER_SERVER - FIXTURE_BASE_TOOLS)
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, http_fixture("--extra-tools", extra, "--handshake-delay", "0.5") as url:
        with running_daemon(Path(tmp)) as d:
            d.initialize()
            for i in range(32):
                d.request("mcpServer/create", {"name": f"s{i:02d}", "config": {"type": "http", "url": url}})
            single = [_start_all(d, [f"s{i:02d}"]) for i in range(3)]
            for i in range(3):
                d.request("mcpServer/stop", {"name": f"s{i:02d}"})
            together = _start_all(d, [f"s{i:02d}" for i in range(16)])
            report["start_one_s"] = round(statistics.median(single), 3)
            report["start_16_at_once_s"] = round(together, 3)
            report["start_ratio"] = round(together / statistics.median(single), 2)
            report["start_budget_ratio"] = 1.5
            report["status_list_16_us"] = round(_median_us(d, "mcpServerStatus/list", {}, calls), 1)
            report["status_list_16_tools_and_auth_us"] = round(
                _median_us(d, "mcpServerStatus/list", {"detail": "toolsAndAuthOnly"}, calls), 1
            )
            report["server_list_us"] = round(_median_us(d, "mcpServer/list", {}, calls), 1)
            d.request("mcpTool/search", {"query": "warmup"})
            report["search_16x128_us"] = round(
                _median_us(d, "mcpTool/search", {"query": "weather forecast report", "limit": 10}, calls), 1
            )
            report["search_budget_us"] = 2000
            _start_all(d, [f"s{i:02d}" for i in range(16, 32)])
            report["rss_32_servers_mib"] = round(_rss_mib(d.process.pid), 1)
            report["rss_budget_mib"] = 150
    return report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = measure(args.calls)
    if args.json:
        print(json.dumps(report))
        return
    print(f"start: one alone {report['start_one_s']} s; 16 at once {report['start_16_at_once_s']} s; "
          f"ratio {report['start_ratio']} (budget ≤ 1.5)")
    print(f"mcpServerStatus/list, 16 connected: {report['status_list_16_us']} µs full, "
          f"{report['status_list_16_tools_and_auth_us']} µs toolsAndAuthOnly "
          f"(mcpServer/list {report['server_list_us']} µs)")
    print(f"mcpTool/search over 16x128 tools, round trip: {report['search_16x128_us']} µs (budget ≤ 2000 µs)")
    print(f"daemon RSS with 32 connected servers: {report['rss_32_servers_mib']} MiB (budget ≤ 150 MiB)")


if __name__ == "__main__":
    main()
