"""The baselines: a bare Python JSON-lines loop that answers every request with an empty list.

``--asyncio`` runs the same loop on asyncio pipes, the I/O floor of any asyncio daemon on this machine.
"""

import json
import sys


def _answer(line: bytes) -> bytes:
    message = json.loads(line)
    return json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": {"data": []}}).encode() + b"\n"


def blocking() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        out.write(_answer(line))
        out.flush()


async def on_asyncio() -> None:
    import asyncio

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout.buffer)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    while line := await reader.readline():
        writer.write(_answer(line))


if __name__ == "__main__":
    if "--asyncio" in sys.argv:
        import asyncio

        asyncio.run(on_asyncio())
    else:
        blocking()
