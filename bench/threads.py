"""``thread/list`` page with 5,000 threads through the real daemon (SPEC §8: ≤ 5 ms round trip).

The threads are made with ``thread/start`` (pipelined) in a fresh data dir, then the daemon is restarted so that
the page is served the way a host meets it after a restart. Run: ``.venv/bin/python -m bench.threads [--json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from typing import Any

from bench.pipe import JsonPipe, daemon_command, encode

BUDGET_MS = 5.0
WINDOW = 128


def _make_threads(data_dir: str, count: int) -> None:
    with JsonPipe(daemon_command(data_dir)) as pipe:
        pipe.initialize()
        sent = answered = 0
        while answered < count:
            while sent < count and sent - answered < WINDOW:
                pipe.write(encode(sent, "thread/start", {"name": f"t{sent}", "strictMcpConfig": True}))
                sent += 1
            message = json.loads(pipe.stdout.readline() or b"null")
            if message is None:
                raise RuntimeError("the daemon exited")
            if "id" not in message or "method" in message:
                continue
            if "error" in message:
                raise RuntimeError(f"thread/start failed: {message['error']}")
            answered += 1  # answers come in any order: the window counts them, not their ids


def measure(threads: int, calls: int, limit: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as data_dir:
        _make_threads(data_dir, threads)
        with JsonPipe(daemon_command(data_dir)) as pipe:
            pipe.initialize()
            first = time.perf_counter()
            page = pipe.request("first", "thread/list", {"limit": limit})
            first_ms = (time.perf_counter() - first) * 1000
            cursor = page.get("nextCursor")
            samples = []
            for i in range(calls):
                params: dict[str, Any] = {"limit": limit}
                if cursor and i % 2:
                    params["cursor"] = cursor
                line = encode(i, "thread/list", params)
                started = time.perf_counter()
                pipe.write(line)
                pipe.response(i)
                samples.append(time.perf_counter() - started)
    return {
        "threads": threads,
        "page_limit": limit,
        "first_page_after_restart_ms": round(first_ms, 2),
        "page_ms": round(statistics.median(samples) * 1000, 3),
        "budget_ms": BUDGET_MS,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=5000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    r = measure(args.threads, args.calls, args.limit)
    if args.json:
        print(json.dumps(r))
        return
    print(f"thread/list page of {r['page_limit']} with {r['threads']} threads: {r['page_ms']} ms median "
          f"(first page after a restart {r['first_page_after_restart_ms']} ms; budget ≤ {BUDGET_MS} ms)")


if __name__ == "__main__":
    main()
