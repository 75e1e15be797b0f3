"""The floor of time to usable: a bare Python process that imports the MCP SDK's client and starts and initializes
the given stdio servers in parallel, then prints one line. Nothing else: no store, no catalog, no JSON-RPC front end.
Run by ``bench.usable``: ``python bench/usable_floor.py '<JSON list of argv>'``.
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client


async def main(servers: list[list[str]]) -> None:
    ready = anyio.Event()
    started = 0

    async def one(argv: list[str]) -> None:
        nonlocal started
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        async with Client(stdio_client(params), mode="legacy", read_timeout_seconds=60):
            started += 1
            if started == len(servers):
                print("ready", flush=True)
                ready.set()
            await ready.wait()

    async with anyio.create_task_group() as tasks:
        for argv in servers:
            tasks.start_soon(one, argv)


if __name__ == "__main__":
    anyio.run(main, json.loads(sys.argv[1]))
