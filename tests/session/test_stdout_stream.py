"""The stdio read stream (``mcp_runtime.session.stdout``) on a real child's stdout: lines however the pipe cuts them, in
order and through the guard; the end of the pipe, an oversized line and a close."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
import pytest
from mcp.shared.message import SessionMessage

from mcp_runtime.session.stdio import _read_pipe
from mcp_runtime.session.stdout import STDOUT_CHUNK, StdoutStream
from mcp_runtime.session.upstream_guard import REASON_MARKER, SkippedLine, UpstreamGuard

LIMIT = 300_000
"""A small line limit for these tests (the daemon's is 64 MiB): past it, a line is let go, never held."""


async def _child(
    code: str, guard: UpstreamGuard | None = None
) -> tuple[anyio.abc.Process, StdoutStream, anyio.Event, object]:
    reader, pipe, child_end = await _read_pipe(STDOUT_CHUNK)
    try:
        process = await anyio.open_process([sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=child_end)
    finally:
        os.close(child_end)
    exited = anyio.Event()
    return process, StdoutStream(reader, guard or UpstreamGuard(), exited, LIMIT), exited, pipe


PIECES = (
    "import sys, json\n"
    "lines = (json.dumps({'jsonrpc': '2.0', 'id': i, 'result': {'n': i}}).encode() for i in range(300))\n"
    "out = b''.join(line + b'\\n\\n' for line in lines)\n"
    "step = 1\n"
    "while out:\n"
    "    sys.stdout.buffer.write(out[:step]); sys.stdout.buffer.flush(); out = out[step:]; step = step * 3 % 1021 + 1\n"
)


def test_lines_cut_anywhere_arrive_whole_and_in_order_then_the_end_marks_the_server_exited() -> None:
    async def main() -> None:
        process, stream, exited, pipe = await _child(PIECES)
        async with process:
            ids = []
            async for item in stream:
                assert isinstance(item, SessionMessage)
                ids.append(item.message.id)
            assert ids == list(range(300))  # blank lines between them are skipped
            assert exited.is_set()
            with pytest.raises(anyio.EndOfStream):
                await stream.receive()
        pipe.close()

    anyio.run(main)


def _request(request_id: int | str) -> object:
    from mcp_types import JSONRPCRequest

    return JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params={"name": "read"})


@pytest.mark.parametrize("cut", ["whole", "pieces"])
def test_a_line_over_the_limit_fails_the_request_it_answers_and_the_stream_goes_on(cut: str) -> None:
    """An oversized answer, its id at its start (as Python writes) or at its end (as TypeScript writes), fails its
    own request ``responseTooLarge`` with its size; an oversized line answering nothing is skipped; the lines
    after each still arrive, whether the pipe gave the long line in one read or in many."""
    big = LIMIT + 10
    code = (
        "import sys, time\n"
        "w = sys.stdout.buffer.write\n"
        "def send(data):\n"
        "    if '" + cut + "' == 'whole':\n"
        "        w(data); sys.stdout.flush(); return\n"
        "    for i in range(0, len(data), 4093):\n"
        "        w(data[i:i + 4093]); sys.stdout.flush()\n"
        "send(b'{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\\n')\n"
        f"send(b'{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"t\":\"' + b'x' * {big} + b'\"}}}}\\n')\n"
        f"send(b'{{\"result\":{{\"t\":\"' + b'y' * {big} + b'\"}},\"jsonrpc\":\"2.0\",\"id\":\"s-3\"}}\\n')\n"
        f"send(b'[' + b' ' * {big} + b']\\n')\n"
        "send(b'{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\\n')\n"
    )
    guard = UpstreamGuard()
    for request_id in (1, 2, "s-3", 4):
        guard.sent(_request(request_id))

    async def main() -> None:
        process, stream, exited, pipe = await _child(code, guard)
        async with process:
            items = [item async for item in stream]
            await process.wait()
        pipe.close()
        assert [type(item).__name__ for item in items] == ["SessionMessage"] * 3 + ["SkippedLine", "SessionMessage"]
        assert isinstance(items[3], SkippedLine)
        assert [item.message.id for item in items if isinstance(item, SessionMessage)] == [1, 2, "s-3", 4]
        for failed in (items[1], items[2]):
            assert isinstance(failed, SessionMessage)
            data = failed.message.error.data
            assert data[REASON_MARKER] == "responseTooLarge" and data["limit"] == LIMIT
            assert data["size"] > big
        assert exited.is_set()

    anyio.run(main)


def test_a_closed_stream_refuses_reads() -> None:
    async def main() -> None:
        process, stream, exited, pipe = await _child("print('{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}')")
        async with process:
            async with stream:
                await process.wait()
            with pytest.raises(anyio.ClosedResourceError):
                await stream.receive()
            assert not exited.is_set()  # closed by us, not ended by the child
        pipe.close()

    anyio.run(main)


STORM = (
    "import sys\n"
    "changed = b'{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\\n'\n"
    "prompts = b'{\"jsonrpc\":\"2.0\",\"method\":\"notifications/prompts/list_changed\"}\\n'\n"
    "answer = b'{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"text\":\"list_changed\"}}\\n'\n"
    "sys.stdout.buffer.write(changed * 500 + prompts + answer + answer + changed * 500)\n"
)


def test_a_burst_of_list_changed_lines_is_read_as_one_announcement_each() -> None:
    """A storm of identical ``list_changed`` lines still waiting in the stream says nothing more than the first:
    each kind is delivered once per burst, in order, and nothing else is ever merged (two equal answers stay two)."""

    async def main() -> None:
        process, stream, _, pipe = await _child(STORM)
        async with process:
            got = []
            async for item in stream:
                assert isinstance(item, SessionMessage)
                message = item.message
                got.append(getattr(message, "method", None) or f"answer {message.id}")
        pipe.close()
        assert got[:4] == ["notifications/tools/list_changed", "notifications/prompts/list_changed", "answer 7",
                           "answer 7"]  # fmt: skip
        assert set(got[4:]) <= {"notifications/tools/list_changed"} and len(got) < 10, got

    anyio.run(main)
