"""The stdio write stream (``mcp_runtime.session.stdin``): the anyio internals it writes through, and its behaviour on a
real child process (order, one write per loop pass after the first, a broken pipe)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import anyio
import pytest
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCNotification, JSONRPCRequest

from mcp_runtime.session.stdin import StdinStream, stdin_writer
from mcp_runtime.session.upstream_guard import UpstreamGuard

COPY = "import sys\nfor line in sys.stdin: sys.stdout.write(line); sys.stdout.flush()\n"


async def _open(code: str) -> anyio.abc.Process:
    return await anyio.open_process([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def _request(i: int) -> SessionMessage:
    return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=i, method="tools/call", params={"name": f"t{i}"}))


def test_anyio_stdin_still_wraps_an_asyncio_writer() -> None:
    async def main() -> None:
        process = await _open("import sys; sys.stdin.read()")
        async with process:
            assert isinstance(stdin_writer(process), asyncio.StreamWriter)
            await process.stdin.aclose()

    anyio.run(main)


def test_messages_arrive_in_order_and_the_guard_sees_each_request() -> None:
    async def main() -> None:
        process = await _open(COPY)
        guard = UpstreamGuard()
        async with process:
            stream = StdinStream(stdin_writer(process), guard, anyio.Event())
            async with anyio.create_task_group() as tasks:  # many sends in one loop pass, then one more
                for i in range(50):
                    tasks.start_soon(stream.send, _request(i))
            await stream.send(SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")))
            received = b""
            while received.count(b"\n") < 51:
                received += await process.stdout.receive()
            lines = received.splitlines()
            assert [line.count(b'"id":%d,' % i) for i, line in enumerate(lines[:50])] == [1] * 50
            assert b"notifications/initialized" in lines[50]
            assert len(guard._in_flight) == 50
            await process.stdin.aclose()

    anyio.run(main)


def test_a_closed_pipe_is_a_broken_resource_and_marks_the_server_exited() -> None:
    async def main() -> None:
        process = await _open("pass")
        exited = anyio.Event()
        async with process:
            await process.wait()
            stream = StdinStream(stdin_writer(process), UpstreamGuard(), exited)
            with pytest.raises(anyio.BrokenResourceError):
                for i in range(10_000):  # the first writes may land in the buffer before the loss is seen
                    await stream.send(_request(i))
                    await anyio.sleep(0)
            assert exited.is_set()
        stream.close()
        with pytest.raises(anyio.ClosedResourceError):
            await stream.send(_request(0))

    anyio.run(main)
