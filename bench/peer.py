"""Against the peer (SPEC §8): spawn → 8 enabled stdio servers' tools usable, the daemon against Codex app-server
(npm ``@openai/codex``, pinned in the root package.json) with the same 8 servers, for npm ``server-everything`` and
for a minimal Python server (``bench/minimal_server.py``); and how soon after ``initialized`` the first server
process exists.

Both are driven as a host drives them at launch: ``initialize``, its answer, then ``initialized`` with the
first list of servers (``mcpServer/list``; Codex: ``mcpServerStatus/list``). The daemon's servers are
in its store (created through it, as a settings page would) and it runs as a host starts it (``--path-from-shell
auto``, with a login profile that takes a second, as in ``bench.usable``); it is usable once every server's
``mcpServer/startupStatus/updated`` says ``ready``. Codex gets the servers as ``-c mcp_servers.<name>.*`` overrides
and a fresh ``CODEX_HOME``, runs offline, and is usable once ``mcpServerStatus/list`` answers with every server's
tools. Codex is started as its native binary (what a desktop host runs), not through the npm launcher's Node.
The first spawn is seen through a FIFO: in separate rounds each server's command is ``sh -c 'echo > FIFO; exec …'``
and the time from writing ``initialized`` to the FIFO's first line is read with a blocking ``select``. Rounds take
turns (daemon, Codex, the floor, per kind) and the figures are medians. The floor is ``bench/usable_floor.py``, a
bare Python process that imports the SDK's client and starts and initializes the same 8 servers, nothing else: a
daemon built on the SDK cannot be usable sooner, so its ratio against Codex bounds the daemon's. Each Python side's
own CPU time at usable is read from ``/proc`` (the daemon's is nearly all imports: see bench/README.md).
Run: ``.venv/bin/python -m bench.peer [--rounds 7] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.pipe import ROOT, JsonPipe, daemon_command, encode
from bench.tool_call import EVERYTHING
from bench.usable import _slow_login_home, floor_round

SERVERS = 8
MINIMAL = [sys.executable, str(ROOT / "bench" / "minimal_server.py")]
KINDS: dict[str, list[str]] = {"everything": EVERYTHING, "minimal": MINIMAL}
BUDGETS = {"everything": 1.1, "minimal": 2.5}
SPAWN_BUDGET_MS = 50.0
INITIALIZED = b'{"jsonrpc":"2.0","method":"initialized"}\n'
MARK = 'echo > "$0"; exec "$@"'
"""The first-spawn wrapper: ``sh -c MARK FIFO argv…`` writes a line to the FIFO, then becomes the server."""


def codex_binary() -> Path | None:
    """The native Codex binary the npm package installed for this platform, if any."""
    vendor = ROOT / "node_modules" / "@openai" / "codex-linux-x64" / "vendor"
    found = sorted(vendor.glob("*/bin/codex"))
    return found[0] if found else None


def _argv(kind: str, fifo: str | None) -> list[str]:
    argv = KINDS[kind]
    return ["/bin/sh", "-c", MARK, fifo, *argv] if fifo is not None else list(argv)


def _servers(kind: str, fifo: str | None) -> dict[str, list[str]]:
    return {f"server-{i}": _argv(kind, fifo) for i in range(SERVERS)}


def fill(data_dir: str, kind: str, fifo: str | None) -> None:
    with JsonPipe(daemon_command(data_dir)) as pipe:
        pipe.initialize()
        for name, argv in _servers(kind, fifo).items():
            config = {"command": argv[0], "args": argv[1:], "env": {"SERVER_INDEX": name}}
            pipe.request(name, "mcpServer/create", {"name": name, "config": config})


class Fifo:
    """A FIFO held open for reading (so the servers' writes never block) and for writing (so it never reads as
    ended between rounds), read with a bounded ``select``."""

    def __init__(self, folder: str) -> None:
        self.path = os.path.join(folder, "spawned")
        os.mkfifo(self.path)
        self._fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        self._writer = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)

    def drain(self) -> None:
        try:
            while os.read(self._fd, 4096):
                pass
        except BlockingIOError:
            pass

    def first_line_after(self, began: float) -> float:
        """Milliseconds from ``began`` until a server wrote its line."""
        if not select.select([self._fd], [], [], 60)[0]:
            raise RuntimeError("no server process started within 60 s")
        return (time.perf_counter() - began) * 1000

    def close(self) -> None:
        os.close(self._writer)
        os.close(self._fd)


def daemon_round(
    data_dir: str, env: dict[str, str], fifo: Fifo | None, cpu: list[float] | None = None
) -> tuple[float, float | None]:
    """(seconds from spawn until every server is ``ready``, ms from ``initialized`` to the first server process);
    ``cpu`` gets the daemon's CPU time when they are."""
    if fifo is not None:
        fifo.drain()
    started = time.perf_counter()
    ready: set[str] = set()
    spawned = None
    with JsonPipe(daemon_command(data_dir, "--path-from-shell", "auto"), env) as pipe:
        pipe.request("init", "initialize", {"clientInfo": {"name": "bench", "version": "0"}})
        initialized = time.perf_counter()
        pipe.write(INITIALIZED + encode("list", "mcpServer/list", {}))
        if fifo is not None:
            spawned = fifo.first_line_after(initialized)
        while len(ready) < SERVERS:
            line = pipe.stdout.readline()
            if not line:
                raise RuntimeError("the daemon exited")
            message = json.loads(line)
            params = message.get("params") or {}
            if message.get("method") == "mcpServer/startupStatus/updated" and params.get("threadId") is None:
                if params["status"] == "failed":
                    raise RuntimeError(f"{params['name']} failed: {params['error']}")
                if params["status"] == "ready":
                    ready.add(params["name"])
        usable = time.perf_counter() - started
        if cpu is not None:
            cpu.append(pipe.cpu_seconds())
    return usable, spawned


def codex_round(binary: Path, home: str, kind: str, fifo: Fifo | None) -> tuple[float, float | None]:
    """The same for Codex app-server: usable once ``mcpServerStatus/list`` answers with every server's tools."""
    if fifo is not None:
        fifo.drain()
    overrides: list[str] = []
    for name, argv in _servers(kind, fifo.path if fifo is not None else None).items():
        overrides += ["-c", f"mcp_servers.{name}.command={json.dumps(argv[0])}"]
        overrides += ["-c", f"mcp_servers.{name}.args={json.dumps(argv[1:])}"]
        overrides += ["-c", f'mcp_servers.{name}.env={{SERVER_INDEX="{name}"}}']
    started = time.perf_counter()
    spawned = None
    env = {**os.environ, "CODEX_HOME": home, "RUST_LOG": "error"}
    with JsonPipe([str(binary), "app-server", *overrides], env) as pipe:
        pipe.request("init", "initialize", {"clientInfo": {"name": "bench", "version": "0"}})
        initialized = time.perf_counter()
        pipe.write(INITIALIZED + encode("list", "mcpServerStatus/list", {}))
        if fifo is not None:
            spawned = fifo.first_line_after(initialized)
        rows = pipe.response("list")["result"]["data"]
        usable = time.perf_counter() - started
    tools = {row["name"]: len(row["tools"]) for row in rows}
    if len(tools) != SERVERS or not all(tools.values()):
        raise RuntimeError(f"Codex listed {tools}")
    return usable, spawned


def _median_ms(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 1) if present else None


def _turns(
    kind: str, data_dir: str, env: dict[str, str], binary: Path | None, home: str, cpu: dict[str, list[float]]
) -> list[tuple[str, Callable[[bool], float]]]:
    """Each side's round for one kind: seconds to usable; a kept round also records the side's CPU time."""
    argv = list(_servers(kind, None).values())

    def daemon(kept: bool) -> float:
        return daemon_round(data_dir, env, None, cpu["daemon"] if kept else None)[0]

    def floor(kept: bool) -> float:
        return floor_round(servers=argv, cpu=cpu["floor"] if kept else None)

    turns: list[tuple[str, Callable[[bool], float]]] = [("daemon", daemon), ("floor", floor)]
    if binary is not None:
        turns.append(("codex", lambda kept: codex_round(binary, home, kind, None)[0]))
    return turns


def measure(rounds: int, spawn_rounds: int) -> dict[str, Any]:
    binary = codex_binary()
    report: dict[str, Any] = {"servers": SERVERS, "rounds": rounds, "codex": str(binary) if binary else None}
    with tempfile.TemporaryDirectory() as folder:
        env = _slow_login_home(folder)
        fifo = Fifo(folder)
        home = os.path.join(folder, "codex-home")
        os.mkdir(home)
        try:
            for kind in KINDS:
                for marked in (False, True):
                    data_dir = os.path.join(folder, f"{kind}-{'marked' if marked else 'plain'}")
                    os.mkdir(data_dir)
                    fill(data_dir, kind, fifo.path if marked else None)
            rows: dict[str, Any] = {}
            for kind in KINDS:
                plain = os.path.join(folder, f"{kind}-plain")
                marked = os.path.join(folder, f"{kind}-marked")
                cpu: dict[str, list[float]] = {"daemon": [], "floor": []}
                turns = _turns(kind, plain, env, binary, home, cpu)
                for _, run in turns:
                    run(False)  # warm the page cache for every side
                samples: dict[str, list[float]] = {side: [] for side, _ in turns}
                for _ in range(rounds):
                    for side, run in turns:
                        samples[side].append(run(True))
                spawns: dict[str, list[float | None]] = {"daemon": [], "codex": []}
                for _ in range(spawn_rounds):
                    spawns["daemon"].append(daemon_round(marked, env, fifo)[1])
                    if binary is not None:
                        spawns["codex"].append(codex_round(binary, home, kind, fifo)[1])
                row: dict[str, Any] = {
                    "daemon_s": round(statistics.median(samples["daemon"]), 3),
                    "floor_s": round(statistics.median(samples["floor"]), 3),
                    "daemon_cpu_s": round(statistics.median(cpu["daemon"]), 3),
                    "floor_cpu_s": round(statistics.median(cpu["floor"]), 3),
                }
                row["daemon_over_floor"] = round(row["daemon_s"] / row["floor_s"], 2)
                if binary is not None:
                    row["codex_s"] = round(statistics.median(samples["codex"]), 3)
                    row["ratio"] = round(row["daemon_s"] / row["codex_s"], 2)
                    row["floor_ratio"] = round(row["floor_s"] / row["codex_s"], 2)
                row["budget_ratio"] = BUDGETS[kind]
                row["first_spawn_after_initialized_ms"] = _median_ms(spawns["daemon"])
                row["codex_first_spawn_after_initialized_ms"] = _median_ms(spawns["codex"])
                rows[kind] = row
            report["kinds"] = rows
        finally:
            fifo.close()
            shutil.rmtree(home, ignore_errors=True)
    return report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--spawn-rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = measure(args.rounds, args.spawn_rounds)
    if args.json:
        print(json.dumps(report))
        return
    if report["codex"] is None:
        print("Codex app-server is not installed (npm @openai/codex): the daemon's side only")
    for kind, row in report["kinds"].items():
        codex = ""
        if "codex_s" in row:
            codex = f"Codex {row['codex_s']} s   ratio {row['ratio']} (budget ≤ {row['budget_ratio']})"
        print(f"{SERVERS} x {kind}: spawn → usable   daemon {row['daemon_s']} s   {codex}")
        floor = f"the bare SDK floor {row['floor_s']} s"
        if "floor_ratio" in row:
            floor += f" ({row['floor_ratio']} x Codex)"
        print(
            f"  {floor}; the daemon {row['daemon_over_floor']} x the floor; CPU at usable: daemon "
            f"{row['daemon_cpu_s']} s, floor {row['floor_cpu_s']} s"
        )
        print(
            f"  first server process after initialized: daemon {row['first_spawn_after_initialized_ms']} ms "
            f"(budget ≤ {SPAWN_BUDGET_MS:g}), Codex {row['codex_first_spawn_after_initialized_ms']} ms"
        )


if __name__ == "__main__":
    main()
