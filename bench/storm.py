"""Latency during another server's ``tools/list_changed`` storm (SPEC §8): a call to a calm server ≤ 2x its calm
latency, ``mcpServer/list`` ≤ 5 ms at the median.

One daemon; a thread holds the calm fixture server; the storming one (a fresh 400 KiB schema on every list, a
``list_changed`` every 20 ms) is another thread's, started and archived between rounds, so calm and storm rounds
interleave in one run and each budget is a ratio of medians taken in that run.

Run from the repo root: ``.venv/bin/python -m bench.storm [--rounds N] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.pipe import ROOT, JsonPipe, daemon_command, encode

STORM_KIB = 400
INTERVAL_MS = 20
LIST_BUDGET_MS = 5.0
CALL_BUDGET_RATIO = 2.0
FIXTURE = (sys.executable, str(ROOT / "scripts" / "smoke" / "fixtures" / "fixture_server.py"))


class _Session:
    """The daemon's pipe, counting the storming server's refreshed catalogs while it waits for answers."""

    def __init__(self, pipe: JsonPipe) -> None:
        self.pipe = pipe
        self.refreshes = 0
        self._ids = 0

    def request(self, method: str, params: dict[str, Any] | None = None) -> tuple[dict[str, Any], float]:
        self._ids += 1
        request_id = self._ids
        began = time.perf_counter()
        self.pipe.write(encode(request_id, method, params))
        while True:
            line = self.pipe.stdout.readline()
            if not line:
                raise RuntimeError("the daemon exited")
            message: dict[str, Any] = json.loads(line)
            if message.get("method") == "mcp:tools_updated" and message["params"].get("server") == "storm":
                self.refreshes += 1
            if "method" in message or message.get("id") != request_id:
                continue
            took = (time.perf_counter() - began) * 1000
            if "error" in message:
                raise RuntimeError(f"{method}: {message['error']}")
            return message["result"], took

    def storming(self, refreshes: int) -> None:
        """Until ``refreshes`` more catalogs of the storming server have come (it storms, the daemon keeps up)."""
        target = self.refreshes + refreshes
        while self.refreshes < target:
            self.request("mcpServer/list", {})


def _config(*args: str, **extra: Any) -> dict[str, Any]:
    return {"command": FIXTURE[0], "args": [*FIXTURE[1:], *args], **extra}


def _round(session: _Session, thread_id: str, samples: int, gap_s: float) -> tuple[list[float], list[float]]:
    """``samples`` interleaved (calm call, list) round trips in ms, ``gap_s`` apart as a settings page polls."""
    call = {"threadId": thread_id, "server": "calm", "tool": "echo", "arguments": {"text": "x"}}
    calls, lists = [], []
    for _ in range(samples):
        calls.append(session.request("mcpServer/tool/call", call)[1])
        lists.append(session.request("mcpServer/list", {})[1])
        time.sleep(gap_s)
    return calls, lists


def measure(rounds: int = 6, samples: int = 40, gap_s: float = 0.01, interval_ms: int = INTERVAL_MS) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as home, JsonPipe(daemon_command(home)) as pipe:
        session = _Session(pipe)
        pipe.initialize()
        stormy = _config("--storm-kib", str(STORM_KIB), "--storm-interval-ms", str(interval_ms))
        storm = {"strictMcpConfig": True, "mcpServers": {"storm": stormy}}
        started, _ = session.request("thread/start", {"strictMcpConfig": True, "mcpServers": {"calm": _config()}})
        thread_id = started["thread"]["id"]
        _round(session, thread_id, 5, 0)  # warm: the calm server connected, every module loaded
        calm: dict[str, list[float]] = {"call": [], "list": []}
        stormy: dict[str, list[float]] = {"call": [], "list": []}
        refreshed = 0
        for _ in range(rounds):
            calls, lists = _round(session, thread_id, samples, gap_s)
            calm["call"].append(statistics.median(calls))
            calm["list"].append(statistics.median(lists))
            storming, _ = session.request("thread/start", storm)
            session.storming(3)
            before = session.refreshes
            calls, lists = _round(session, thread_id, samples, gap_s)
            refreshed += session.refreshes - before
            stormy["call"].append(statistics.median(calls))
            stormy["list"].append(statistics.median(lists))
            session.request("thread/archive", {"threadId": storming["thread"]["id"]})
        calm_call = statistics.median(calm["call"])
        storm_call = statistics.median(stormy["call"])
        return {
            "rounds": rounds,
            "interval_ms": interval_ms,
            "samples_per_round": samples,
            "calm_call_ms": round(calm_call, 3),
            "storm_call_ms": round(storm_call, 3),
            "call_ratio": round(storm_call / calm_call, 2),
            "call_budget_ratio": CALL_BUDGET_RATIO,
            "calm_list_ms": round(statistics.median(calm["list"]), 3),
            "storm_list_ms": round(statistics.median(stormy["list"]), 3),
            "list_budget_ms": LIST_BUDGET_MS,
            "refreshes_while_measured": refreshed,
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--interval-ms", type=int, default=INTERVAL_MS, help="between list_changed (0: flat out)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.rounds, interval_ms=args.interval_ms)
    if args.json:
        print(json.dumps(result))
        return
    call_met = result["call_ratio"] <= CALL_BUDGET_RATIO
    list_met = result["storm_list_ms"] <= LIST_BUDGET_MS
    print(f"list_changed storm ({STORM_KIB} KiB schema, every {args.interval_ms} ms), medians of {args.rounds} "
          f"interleaved rounds, {result['refreshes_while_measured']} refreshes while measured:")  # fmt: skip
    print(f"  call to a calm server: {result['storm_call_ms']} ms, calm {result['calm_call_ms']} ms "
          f"({result['call_ratio']}x, budget ≤ {CALL_BUDGET_RATIO}x: {'met' if call_met else 'NOT met'})")  # fmt: skip
    print(f"  mcpServer/list: {result['storm_list_ms']} ms, calm {result['calm_list_ms']} ms "
          f"(budget ≤ {LIST_BUDGET_MS} ms: {'met' if list_met else 'NOT met'})")  # fmt: skip


if __name__ == "__main__":
    main()
