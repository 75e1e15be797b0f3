"""Soak: thousands of tool calls, status lists, hostile lines and server restarts through one daemon; RSS and open
fds before/after; then large results to a client that stops reading (SPEC §1: at most +256 MiB while it does not
read, back within 64 MiB once it has read everything).

A leak shows as growth that scales with the number of rounds; the table prints each phase's totals.
Run: ``.venv/bin/python -m bench.soak [--rounds 5] [--calls 2000] [--lists 2000] [--hostile 500] [--restarts 10]
[--deaf-calls 256] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.pipe import JsonPipe, daemon_command
from bench.tool_call import FIXTURE
from scripts.smoke.fixtures.launch import http_fixture

HTTP_SERVERS = 8
"""Restarted together: an ended session is left as reference cycles that only the collector frees, so RSS growth
over the restarts shows whether its policy (``app_server.process.memory``) keeps up."""

DEAF_TEXT = 2_040_000
"""The fixture's ``big`` answers its text twice (content and structuredContent): a response line of ~3.9 MiB."""

HOSTILE = [
    b"[" * 982 + b"]" * 982,
    b'{"id":"\\ud800","method":"mcpServer/list"}',
    b'{"id":1,"method":"mcpServer/list","params":{"x":NaN}}',
    b'{"id":1,"method":"mcpServer/list","params":{"x":"\xff"}}',
    b"not json",
]


def _memory(pid: int) -> dict[str, int]:
    """Resident KiB (now and peak) and open file descriptors of the daemon (Linux /proc)."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {
        "rss_kib": int(fields["VmRSS"].split()[0]),
        "peak_kib": int(fields["VmHWM"].split()[0]),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
    }


def _pipelined(daemon: JsonPipe, messages: list[dict[str, Any]]) -> int:
    """Send every message, then read until each has been answered; returns how many were errors."""
    daemon.stdin.write(b"".join(json.dumps(m, separators=(",", ":")).encode() + b"\n" for m in messages))
    daemon.stdin.flush()
    return _answers(daemon, {m["id"] for m in messages})


def _answers(daemon: JsonPipe, pending: set[Any]) -> int:
    """Read until each id in ``pending`` has been answered; returns how many answers were errors."""
    errors = 0
    while pending:
        line = daemon.stdout.readline()
        if not line:
            raise RuntimeError("the daemon exited")
        message = json.loads(line)
        if "method" not in message and message.get("id") in pending:
            pending.discard(message["id"])
            errors += "error" in message
    return errors


def _hostile(daemon: JsonPipe, count: int) -> None:
    lines = b"".join(HOSTILE[i % len(HOSTILE)] + b"\n" for i in range(count))
    daemon.stdin.write(lines + b'{"id":"after-hostile","method":"mcpServer/list"}\n')
    daemon.stdin.flush()
    daemon.response("after-hostile")


def _restarts(daemon: JsonPipe, ids: Iterator[int], count: int) -> int:
    """``count`` times: start the HTTP servers at once, then stop them at once; returns how many were errors."""
    errors = 0
    names = [f"web{i}" for i in range(HTTP_SERVERS)]
    for _ in range(count):
        for method in ("mcpServer/start", "mcpServer/stop"):
            errors += _pipelined(daemon, [{"id": next(ids), "method": method, "params": {"name": n}} for n in names])
    return errors


def _reset_peak(pid: int) -> None:
    """Start the peak RSS (VmHWM) afresh, so a phase's peak is its own (Linux ``clear_refs``)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def _spooled(pid: int, data_dir: str) -> int:
    """Bytes in the daemon's output spools: its open, unnamed files in the data dir."""
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(f"{data_dir}/"):
                info = os.stat(f"/proc/{pid}/fd/{fd}")
                total += info.st_size if info.st_nlink == 0 else 0
        except FileNotFoundError:
            continue
    return total


def _deaf_client(daemon: JsonPipe, data_dir: str, call: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """``count`` calls answering ~3.9 MiB each while the client does not read, then it reads them all; rows: RSS
    and peak while it did not read (once the answers the daemon could not send are on disk), then after."""
    pid = daemon.process.pid
    big = {**call, "tool": "big", "arguments": {"bytes": DEAF_TEXT}}
    daemon.write(json.dumps({"id": "deaf-size", "method": "mcpServer/tool/call", "params": big}).encode() + b"\n")
    line_bytes = len(daemon.stdout.readline())
    _reset_peak(pid)
    started = time.perf_counter()
    daemon.write(b"".join(
        json.dumps({"id": f"deaf-{i}", "method": "mcpServer/tool/call", "params": big}).encode() + b"\n"
        for i in range(count)
    ))  # fmt: skip
    while _spooled(pid, data_dir) < count * line_bytes - (24 << 20):
        if time.perf_counter() - started > 600:
            raise RuntimeError("the answers never reached the spool")
        time.sleep(0.1)
    deaf = {"phase": "deaf", "seconds": round(time.perf_counter() - started, 2), "errors": 0, **_memory(pid)}
    deaf["spooled_mib"] = round(_spooled(pid, data_dir) / (1 << 20), 1)
    started = time.perf_counter()
    errors = _answers(daemon, {f"deaf-{i}" for i in range(count)})
    read = {"phase": "read all", "seconds": round(time.perf_counter() - started, 2), "errors": errors, **_memory(pid)}
    return [deaf, read]


def run(rounds: int, calls: int, lists: int, hostile: int, restarts: int, deaf_calls: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as data_dir, http_fixture("--extra-tools", "115") as url:
        daemon = JsonPipe(daemon_command(data_dir))
        try:
            daemon.initialize()
            for i in range(HTTP_SERVERS):
                web = {"name": f"web{i}", "config": {"type": "http", "url": url}}
                daemon.request(f"web{i}", "mcpServer/create", web)
            server = {"command": FIXTURE[0], "args": FIXTURE[1:]}
            daemon.request("create", "mcpServer/create", {"name": "fx", "config": server})
            daemon.request("start", "mcpServer/start", {"name": "fx"})
            thread = daemon.request("thread", "thread/start", {"name": "soak", "mcpServers": {"fx": server}})
            call = {"threadId": thread["thread"]["id"], "server": "fx", "tool": "echo", "arguments": {"text": "soak"}}
            daemon.request("call", "mcpServer/tool/call", call)
            rows.append({"phase": "start", "seconds": 0.0, "errors": 0, **_memory(daemon.process.pid)})
            ids = iter(range(10**9))
            for round_number in range(1, rounds + 1):
                started = time.perf_counter()
                errors = 0
                for batch in range(0, calls, 200):
                    batch_calls = [
                        {"id": next(ids), "method": "mcpServer/tool/call", "params": call}
                        for _ in range(min(200, calls - batch))
                    ]
                    errors += _pipelined(daemon, batch_calls)
                for batch in range(0, lists, 200):  # pipelined below the 256 in-flight cap
                    size = min(200, lists - batch)
                    status = [{"id": next(ids), "method": "mcpServerStatus/list"} for _ in range(size)]
                    errors += _pipelined(daemon, status)
                _hostile(daemon, hostile)
                errors += _restarts(daemon, ids, restarts)
                rows.append({
                    "phase": f"round {round_number}",
                    "seconds": round(time.perf_counter() - started, 2),
                    "errors": errors,
                    **_memory(daemon.process.pid),
                })
            if deaf_calls:
                rows.append({"phase": "before", "seconds": 0.0, "errors": 0, **_memory(daemon.process.pid)})
                rows += _deaf_client(daemon, data_dir, call, deaf_calls)
        finally:
            daemon.close()
    return rows


def _table(rows: list[dict[str, Any]]) -> str:
    header = f"{'phase':<10} {'seconds':>8} {'errors':>7} {'RSS MiB':>8} {'peak MiB':>9} {'fds':>5}"
    lines = [header, "-" * len(header)]
    for row in rows:
        lines.append(
            f"{row['phase']:<10} {row['seconds']:>8} {row['errors']:>7} {row['rss_kib'] / 1024:>8.1f}"
            f" {row['peak_kib'] / 1024:>9.1f} {row['fds']:>5}"
        )
    phases = {row["phase"]: row for row in rows}
    first, last = rows[0], phases.get("before", rows[-1])
    lines.append(
        f"growth: RSS {(last['rss_kib'] - first['rss_kib']) / 1024:+.1f} MiB, fds {last['fds'] - first['fds']:+d}"
    )
    if "deaf" in phases:
        before, deaf, read = phases["before"], phases["deaf"], phases["read all"]
        lines.append(
            f"large results to a deaf client: +{(deaf['peak_kib'] - before['rss_kib']) / 1024:.1f}"
            f" MiB at most while it did not read ({deaf['spooled_mib']} MiB spooled; bound +256),"
            f" {(read['rss_kib'] - before['rss_kib']) / 1024:+.1f} MiB once it had read everything (bound 64)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    if not Path("/proc/self/status").exists():
        print("bench.soak reads RSS and fds from /proc (Linux only)", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000, help="tool calls per round")
    parser.add_argument("--lists", type=int, default=2000, help="mcpServerStatus/list requests per round")
    parser.add_argument("--hostile", type=int, default=500, help="hostile lines per round")
    parser.add_argument("--restarts", type=int, default=10, help=f"starts and stops of {HTTP_SERVERS} HTTP servers")
    parser.add_argument("--deaf-calls", type=int, default=256, help="~3.9 MiB answers to a client that stops reading")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = run(args.rounds, args.calls, args.lists, args.hostile, args.restarts, args.deaf_calls)
    print(json.dumps(rows) if args.json else _table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
