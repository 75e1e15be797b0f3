"""Time to usable (SPEC §8): spawn → every enabled server ``ready``, with 8 fast stdio servers enabled in the store and
``--path-from-shell auto``, against the floor measured in the same run: a bare Python process that imports the MCP
SDK's client and starts and initializes the same 8 servers in parallel (``bench/usable_floor.py``). The daemon's
user has a login shell whose profile takes a second (as nvm's does), which the daemon reads once per launch. Rounds
take turns (daemon, floor, daemon, …) so a drift of the machine's speed weighs on both alike; medians.
Run: ``.venv/bin/python -m bench.usable [--rounds 7] [--json]``.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.pipe import ROOT, JsonPipe, cpu_seconds, daemon_command, encode
from bench.tool_call import EVERYTHING

BUDGET = 1.3
SERVERS = 8


def _servers() -> dict[str, dict[str, Any]]:
    """8 fast stdio servers (npm server-everything, Node) as a user's store holds them."""
    return {
        f"server-{i}": {"command": EVERYTHING[0], "args": EVERYTHING[1:], "env": {"SERVER_INDEX": str(i)}}
        for i in range(SERVERS)
    }


def _fill(data_dir: str) -> None:
    with JsonPipe(daemon_command(data_dir)) as pipe:
        pipe.initialize()
        for name, config in _servers().items():
            pipe.request(name, "mcpServer/create", {"name": name, "config": config})


def _slow_login_home(folder: str) -> dict[str, str]:
    """The environment of a daemon whose user's login profile takes a second."""
    home = Path(folder) / "home"
    home.mkdir(exist_ok=True)
    (home / ".bash_profile").write_text("sleep 1\n")
    return {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home), "SHELL": "/bin/bash"}


def daemon_round(data_dir: str, env: dict[str, str], *args: str) -> tuple[float, float]:
    """(seconds until every enabled server is ``ready``, until the first ``mcpServer/list`` is answered), the
    host sending ``initialize``, ``initialized`` and the list at once, as a host does at launch."""
    started = time.perf_counter()
    ready: set[str] = set()
    listed = None
    with JsonPipe(daemon_command(data_dir, "--path-from-shell", "auto", *args), env) as pipe:
        pipe.write(encode("init", "initialize", {"clientInfo": {"name": "bench", "version": "0"}}))
        pipe.write(b'{"jsonrpc":"2.0","method":"initialized"}\n' + encode("list", "mcpServer/list", {}))
        while len(ready) < SERVERS:
            line = pipe.stdout.readline()
            if not line:
                raise RuntimeError("the daemon exited")
            message = json.loads(line)
            if message.get("id") == "list":
                listed = time.perf_counter() - started
            params = message.get("params") or {}
            if message.get("method") == "mcpServer/startupStatus/updated" and params.get("threadId") is None:
                if params["status"] == "failed":
                    raise RuntimeError(f"{params['name']} failed: {params['error']}")
                if params["status"] == "ready":
                    ready.add(params["name"])
        usable = time.perf_counter() - started
    assert listed is not None
    return usable, listed


def floor_round(
    items: list[list[str]] | None = None,
    env: dict[str, str] | None = None,
    servers: list[list[str]] | None = None,
    cpu: list[float] | None = None,
) -> float:
    """``items``: the keychain item (service, user name) each server's secret is read from first, with keyring;
    ``servers``: their argv (default: this bench's servers); ``cpu``: gets the process's CPU time when ready."""
    argv = servers if servers is not None else [[config["command"], *config["args"]] for config in _servers().values()]
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "usable_floor.py"), json.dumps(argv), json.dumps(items or [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    elapsed = time.perf_counter() - started
    if cpu is not None:
        cpu.append(cpu_seconds(process.pid))
    process.kill()
    process.wait()
    if line.strip() != b"ready":
        raise RuntimeError("the floor process did not start its servers")
    return elapsed


def in_turns(rounds: int, daemon: Callable[[], tuple[float, float]], floor: Callable[[], float]) -> dict[str, Any]:
    """One warm-up of each side (the page cache: node_modules, the SDK), then ``rounds`` turns of daemon and floor;
    the report of their medians against the budget."""
    daemon()
    floor()
    daemon_s: list[tuple[float, float]] = []
    floor_s: list[float] = []
    for _ in range(rounds):
        daemon_s.append(daemon())
        floor_s.append(floor())
    usable = statistics.median(u for u, _ in daemon_s)
    floor_median = statistics.median(floor_s)
    return {
        "servers": SERVERS,
        "usable_s": round(usable, 3),
        "floor_s": round(floor_median, 3),
        "ratio": round(usable / floor_median, 2),
        "budget_ratio": BUDGET,
        "first_list_while_starting_ms": round(statistics.median(listed for _, listed in daemon_s) * 1000, 1),
        "rounds": rounds,
    }


def measure(rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as data_dir, tempfile.TemporaryDirectory() as home:
        _fill(data_dir)
        env = _slow_login_home(home)
        return in_turns(rounds, lambda: daemon_round(data_dir, env), floor_round)


def main(measure: Callable[[int], dict[str, Any]] = measure, what: str = "", floor: str = "") -> None:
    """The command line of a time-to-usable benchmark: ``what`` says what its servers hold, ``floor`` what its floor
    does."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = measure(args.rounds)
    if args.json:
        print(json.dumps(report))
        return
    print(f"spawn → {report['servers']} servers ready{what}   daemon {report['usable_s']} s   "
          f"floor{floor} {report['floor_s']} s   ratio {report['ratio']} (budget ≤ {BUDGET})")
    print(f"first mcpServer/list while they start: {report['first_list_while_starting_ms']} ms")


if __name__ == "__main__":
    main()
