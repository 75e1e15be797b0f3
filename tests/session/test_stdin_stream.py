"""The stdio write stream (``mcp_runtime.session.stdin``) on a real child process's asyncio stdin: order, one write
per loop pass after the first, a broken pipe."""

from __future__ import annotations

import asyncio
import sys

import anyio
import pytest
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCNotification, JSONRPCRequest

from mcp_runtime.session.stdin import StdinStream
from mcp_runtime.session.upstream_guard import UpstreamGuard

COPY = "import sys\nfor line in sys.stdin: sys.stdout.write(line); sys.stdout.flush()\n"


async def _open(code: str) -> asyncio.subprocess.Process:
    pipe = asyncio.subprocess.PIPE
    return await asyncio.create_subprocess_exec(sys.executable, "-c", code, stdin=pipe, stdout=pipe)


def _request(i: int) -> SessionMessage:
    return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=i, method="tools/call", params={"name": f"t{i}"}))


def test_messages_arrive_in_order_and_the_guard_sees_each_request() -> None:
    async def main() -> None:
        process = await _open(COPY)
        assert process.stdin is not None and process.stdout is not None
        guard = UpstreamGuard()
        stream = StdinStream(process.stdin, guard, anyio.Event())
        async with anyio.create_task_group() as tasks:  # many sends in one loop pass, then one more
            for i in range(50):
                tasks.start_soon(stream.send, _request(i))
        await stream.send(SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")))
        lines = [await process.stdout.readline() for _ in range(51)]
        assert [line.count(b'"id":%d,' % i) for i, line in enumerate(lines[:50])] == [1] * 50
        assert b"notifications/initialized" in lines[50]
        assert len(guard._in_flight) == 50
        process.stdin.close()
        await process.wait()

    anyio.run(main)


def test_a_closed_pipe_is_a_broken_resource_and_marks_the_server_exited() -> None:
    async def main() -> None:
        process = await _open("pass")
        assert process.stdin is not None
        exited = anyio.Event()
        await process.wait()
        stream = StdinStream(process.stdin, UpstreamGuard(), exited)
        with pytest.raises(anyio.BrokenResourceError):
            for i in range(10_000):  # the first writes may land in the buffer before the loss is seen
                await stream.send(_request(i))
                await anyio.sleep(0)
        assert exited.is_set()
        stream.close()
        with pytest.raises(anyio.ClosedResourceError):
            await stream.send(_request(0))

    anyio.run(main)
