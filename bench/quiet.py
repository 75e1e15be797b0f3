"""A day of conversations (SPEC §8 Scale): 50 threads x 4 stdio servers (npm server-everything), each used once,
then quiet past their idle timeout: the PSS of the daemon and its children while every connection is awake, and
once every thread's connection sleeps (budget ≤ 400 MiB; the servers' management connections, started when they
are created, stay up as they do in an app); and the first call to a sleeping server against that server's own spawn +
initialize, made directly with the SDK in the same run (budget ≤ 1.1x), in interleaved rounds; and the same for a
server that gives its catalog a TTL (SPEC §16: the fixture ``fresh_catalog.py``, whose lists say they stay fresh
for ten minutes), where the woken call is owed no catalog read.
Run: ``.venv/bin/python -m bench.quiet [--threads 50] [--servers 4] [--wakes 7] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

import anyio

from bench.pipe import ROOT, JsonPipe, daemon_command
from bench.tool_call import EVERYTHING

PSS_BUDGET_MIB = 400
FIXTURES = ROOT / "scripts" / "smoke" / "fixtures"
WAKE_BUDGET = 1.1
IDLE_MS = 1000
PROTOCOL: dict[str, Any] = {}
WINDOW = 32
"""Tool calls in flight at once while the conversations are used (starts run in parallel, as a host's threads)."""


def _family(pid: int) -> list[int]:
    """``pid`` and every live descendant."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(parents.get(current, []))
    return found


def _pss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        total += next(int(line.split()[1]) for line in text.splitlines() if line.startswith("Pss:"))
    return total / 1024


def _call(thread_id: str, server: str, request_id: str, arguments: dict[str, Any] | None = None) -> bytes:
    params = {"threadId": thread_id, "server": server, "tool": "echo", "arguments": arguments or {"message": "once"}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "mcpServer/tool/call", "params": params}).encode()


def _use_once(pipe: JsonPipe, threads: list[str], servers: list[str]) -> None:
    """One call to each server of each thread, ``WINDOW`` at a time."""
    calls = [(t, s, f"call-{i}-{s}") for i, t in enumerate(threads) for s in servers]
    pending: set[str] = set()
    while calls or pending:
        while calls and len(pending) < WINDOW:
            thread_id, server, request_id = calls.pop()
            pipe.write(_call(thread_id, server, request_id) + b"\n")
            pending.add(request_id)
        message = json.loads(pipe.stdout.readline())
        if message.get("id") in pending:
            if "error" in message:
                raise RuntimeError(f"a call failed: {message['error']}")
            pending.discard(message["id"])


def conversations(threads: int, servers: int, idle_ms: int) -> tuple[float, float, JsonPipe, list[str]]:
    """(PSS MiB once every conversation was used, PSS MiB once they all went quiet): the pipe stays open."""
    data_dir = tempfile.mkdtemp()
    pipe = JsonPipe(daemon_command(data_dir))
    pipe.initialize()
    names = [f"ev{i}" for i in range(servers)]
    for name in names:
        config = {"command": EVERYTHING[0], "args": EVERYTHING[1:], "idleTimeoutMs": idle_ms, **PROTOCOL}
        pipe.request(name, "mcpServer/create", {"name": name, "config": config})
    resting = 2 + servers  # the daemon, its child watcher, and each server's management connection (never idle)
    deadline = time.monotonic() + 60
    while len(_family(pipe.process.pid)) < resting:
        if time.monotonic() > deadline:
            raise RuntimeError("the servers' management connections never started")
        time.sleep(0.1)
    ids = [pipe.request(f"t{i}", "thread/start", {"servers": names})["thread"]["id"] for i in range(threads)]
    _use_once(pipe, ids, names)
    awake = _pss_mib(_family(pipe.process.pid))
    deadline = time.monotonic() + 120
    while len(_family(pipe.process.pid)) > resting:
        if time.monotonic() > deadline:
            raise RuntimeError("the servers never went quiet")
        time.sleep(0.2)
    quiet = _pss_mib(_family(pipe.process.pid))
    return awake, quiet, pipe, ids


async def _direct_start(argv: list[str], mode: Literal["auto", "legacy"]) -> float:
    """The server's own spawn + initialize, through the SDK alone."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    started = time.perf_counter()
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    async with Client(stdio_client(params), mode=mode, read_timeout_seconds=60):
        return time.perf_counter() - started


def wakes(
    pipe: JsonPipe,
    thread_id: str,
    rounds: int,
    server: str = "ev0",
    argv: list[str] = EVERYTHING,
    mode: Literal["auto", "legacy"] = "legacy",
    arguments: dict[str, Any] | None = None,
) -> tuple[float, float]:
    """(median first call to the sleeping ``server`` of ``thread_id``, median direct spawn + initialize of ``argv``
    in the SDK's ``mode``, the one the daemon speaks with it), taking turns."""
    woken, direct = [], []
    for i in range(rounds):
        deadline = time.monotonic() + 60
        while True:
            rows = pipe.request(f"status-{i}", "mcpServerStatus/list", {"threadId": thread_id, "serverName": server})
            if rows["data"][0]["runtimeStatus"] == "idle":
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{server} never went to sleep")
            time.sleep(0.1)
        started = time.perf_counter()
        pipe.write(_call(thread_id, server, f"wake-{i}", arguments) + b"\n")
        answer = pipe.response(f"wake-{i}")
        woken.append(time.perf_counter() - started)
        if "error" in answer:
            raise RuntimeError(f"the woken call failed: {answer['error']}")
        direct.append(anyio.run(_direct_start, argv, mode))
    return statistics.median(woken), statistics.median(direct)


def fresh_wakes(rounds: int) -> tuple[float, float]:
    """``wakes`` for one thread's server whose catalog stays fresh for ten minutes (its own daemon)."""
    with tempfile.TemporaryDirectory() as folder:
        log = str(Path(folder) / "lists.log")
        argv = [sys.executable, str(FIXTURES / "fresh_catalog.py"), log, "600000", "private"]
        config = {"command": argv[0], "args": argv[1:], "idleTimeoutMs": IDLE_MS}
        with JsonPipe(daemon_command(Path(folder) / "data")) as pipe:
            pipe.initialize()
            thread_id = pipe.request("thread", "thread/start", {"mcpServers": {"fc": config}})["thread"]["id"]
            arguments = {"text": "once"}
            pipe.write(_call(thread_id, "fc", "first", arguments) + b"\n")
            if "error" in pipe.response("first"):
                raise RuntimeError("the fresh-catalog server's first call failed")
            woken = wakes(pipe, thread_id, rounds, "fc", argv, "auto", arguments)
        listed = [line for line in Path(log).read_text().splitlines() if line.endswith(" tools/list")]
        if len(listed) != 1:  # each direct start lists nothing; every woken connection within the TTL neither
            raise RuntimeError(f"the catalog was read {len(listed)} times, not once")
        return woken


def measure(threads: int, servers: int, rounds: int) -> dict[str, Any]:
    awake, quiet, pipe, ids = conversations(threads, servers, IDLE_MS)
    try:
        woken, direct = wakes(pipe, ids[0], rounds)
    finally:
        pipe.close()
    fresh_woken, fresh_direct = fresh_wakes(rounds)
    return {
        "threads": threads,
        "servers": servers,
        "awake_pss_mib": round(awake),
        "quiet_pss_mib": round(quiet),
        "pss_budget_mib": PSS_BUDGET_MIB,
        "wake_call_ms": round(woken * 1000, 1),
        "direct_start_ms": round(direct * 1000, 1),
        "wake_ratio": round(woken / direct, 2),
        "wake_budget_ratio": WAKE_BUDGET,
        "fresh_wake_call_ms": round(fresh_woken * 1000, 1),
        "fresh_direct_start_ms": round(fresh_direct * 1000, 1),
        "fresh_wake_ratio": round(fresh_woken / fresh_direct, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--servers", type=int, default=4)
    parser.add_argument("--wakes", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = measure(args.threads, args.servers, args.wakes)
    if args.json:
        print(json.dumps(report))
        return
    print(f"{report['threads']} threads x {report['servers']} servers: PSS awake {report['awake_pss_mib']} MiB, "
          f"quiet {report['quiet_pss_mib']} MiB (budget ≤ {PSS_BUDGET_MIB})")
    print(f"first call to a sleeping server {report['wake_call_ms']} ms, its own spawn + initialize "
          f"{report['direct_start_ms']} ms, ratio {report['wake_ratio']} (budget ≤ {WAKE_BUDGET})")
    print(f"the same with catalog TTLs (fresh_catalog.py): {report['fresh_wake_call_ms']} ms, its own spawn + "
          f"initialize {report['fresh_direct_start_ms']} ms, ratio {report['fresh_wake_ratio']} "
          f"(budget ≤ {WAKE_BUDGET})")


if __name__ == "__main__":
    main()
