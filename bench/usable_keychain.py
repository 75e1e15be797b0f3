"""Time to usable with every server's secret in the OS keychain (SPEC §8 and §14): the ``bench.usable`` workload
(8 fast stdio servers enabled, ``--path-from-shell auto``), each server holding an ``API_KEY`` the daemon keeps in a
real Secret Service (GNOME Keyring on a private session bus, as the tests run it). The floor reads the same items
with keyring, each in a worker thread before its server starts, then starts and initializes them in parallel.
Run: ``.venv/bin/python -m bench.usable_keychain [--rounds 7] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench import usable
from bench.pipe import JsonPipe, daemon_command
from testing.secret_service import secret_service

KEYCHAIN = ("--secret-store", "keychain")


def _fill(data_dir: str, env: dict[str, str]) -> list[list[str]]:
    """The servers created through the daemon, each with its secret; the keychain item of each, in order."""
    with JsonPipe(daemon_command(data_dir, *KEYCHAIN), env) as pipe:
        pipe.initialize()
        for name, config in usable._servers().items():
            config = {**config, "env": {**config["env"], "API_KEY": f"sk-bench-{name}-0123456789"}}
            pipe.request(name, "mcpServer/create", {"name": name, "config": config})
    stored = json.loads((Path(data_dir) / "mcps.json").read_text())["mcpServers"]
    data_dir_id = json.loads((Path(data_dir) / "secret-store.json").read_text())["id"]
    items = []
    for name in usable._servers():
        reference: str = stored[name]["env"]["API_KEY"]
        items.append([f"mcp-app-server: {name} env.API_KEY ({data_dir_id})", reference.removeprefix("keychain:")])
    return items


def measure(rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as root:
        with secret_service(Path(root) / "keychain") as keychain:
            data_dir, home = Path(root) / "data", Path(root) / "login"
            data_dir.mkdir()
            home.mkdir()
            env = {**usable._slow_login_home(str(home)), **keychain.env()}
            items = _fill(str(data_dir), env)
            usable.daemon_round(str(data_dir), env, *KEYCHAIN)  # warm the page cache for both sides
            usable.floor_round(items, keychain.env())
            daemon: list[float] = []
            floor: list[float] = []
            for _ in range(rounds):
                daemon.append(usable.daemon_round(str(data_dir), env, *KEYCHAIN)[0])
                floor.append(usable.floor_round(items, keychain.env()))
    usable_s, floor_s = statistics.median(daemon), statistics.median(floor)
    return {
        "servers": usable.SERVERS,
        "usable_s": round(usable_s, 3),
        "floor_s": round(floor_s, 3),
        "ratio": round(usable_s / floor_s, 2),
        "budget_ratio": usable.BUDGET,
        "rounds": rounds,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = measure(args.rounds)
    if args.json:
        print(json.dumps(report))
        return
    print(f"spawn → {report['servers']} servers ready, secrets in the keychain   daemon {report['usable_s']} s   "
          f"floor (keyring reads + SDK starts) {report['floor_s']} s   "
          f"ratio {report['ratio']} (budget ≤ {usable.BUDGET})")


if __name__ == "__main__":
    main()
