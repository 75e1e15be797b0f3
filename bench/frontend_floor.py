"""The tool-call floor (SPEC §8): a minimal asyncio JSON-lines front end that forwards each call through the SDK.

It reads the same ``mcpServer/tool/call`` lines the daemon gets, calls the tool with the official SDK client on
one connection to the server given on the command line, and writes the result back; nothing else (no catalog, no
validation, no threads). Each line is served in its own task so that pipelined calls overlap, as in the daemon.
Run: ``python bench/frontend_floor.py -- <server command...>``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any


async def serve(command: list[str]) -> None:
    from mcp import Client, StdioServerParameters

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 22)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout.buffer)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(params, mode="auto", read_timeout_seconds=30) as client:
        tasks: set[asyncio.Task[None]] = set()

        async def call(message: dict[str, Any]) -> None:
            request = message["params"]
            result = await client.call_tool(request["tool"], request.get("arguments") or {})
            body = result.model_dump(mode="json", by_alias=True, exclude_none=True)
            writer.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": body},
                                    separators=(",", ":")).encode() + b"\n")

        while line := await reader.readline():
            message = json.loads(line)
            if message.get("method") != "mcpServer/tool/call":
                writer.write(json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": {}}).encode() + b"\n")
                continue
            task = asyncio.ensure_future(call(message))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.gather(*tasks)


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[sys.argv.index("--") + 1 :]))
