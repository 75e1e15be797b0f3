"""The floor of time to usable: a bare Python process that imports the MCP SDK's client and starts and initializes
the given stdio servers in parallel, then prints one line. Nothing else: no store, no catalog, no JSON-RPC front end.
With keychain items (one per server), each server's secret is first read with keyring (in a worker thread, as the
daemon reads it) and given to it as ``API_KEY``.
Run by ``bench.usable``: ``python bench/usable_floor.py '<JSON list of argv>' ['<JSON list of [service, user]>']``.
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client


async def main(servers: list[list[str]], items: list[list[str]]) -> None:
    ready = anyio.Event()
    started = 0

    async def one(argv: list[str], item: list[str] | None) -> None:
        nonlocal started
        env = None
        if item is not None:
            import keyring

            secret = await anyio.to_thread.run_sync(keyring.get_password, item[0], item[1])
            env = {"API_KEY": secret or ""}
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
        async with Client(stdio_client(params), mode="legacy", read_timeout_seconds=60):
            started += 1
            if started == len(servers):
                print("ready", flush=True)
                ready.set()
            await ready.wait()

    async with anyio.create_task_group() as tasks:
        for index, argv in enumerate(servers):
            tasks.start_soon(one, argv, items[index] if index < len(items) else None)


if __name__ == "__main__":
    anyio.run(main, json.loads(sys.argv[1]), json.loads(sys.argv[2]) if len(sys.argv) > 2 else [])
