"""Time to usable with every server's secret in the OS keychain (SPEC §8 and §14): the ``bench.usable`` workload
(8 fast stdio servers enabled, ``--path-from-shell auto``), each server holding an ``API_KEY`` the daemon keeps in a
real Secret Service (GNOME Keyring on a private session bus, as the tests run it). The floor reads the same items
with keyring, each in a worker thread before its server starts, then starts and initializes them in parallel.
Run: ``.venv/bin/python -m bench.usable_keychain [--rounds 7] [--json]``.
"""

from __future__ import annotations

import json
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
            return usable.in_turns(
                rounds,
                lambda: usable.daemon_round(str(data_dir), env, *KEYCHAIN),
                lambda: usable.floor_round(items, keychain.env()),
            )


if __name__ == "__main__":
    usable.main(measure, ", secrets in the keychain", " (keyring reads + SDK starts)")
