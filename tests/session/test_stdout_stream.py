"""The stdio read stream (``mcp_runtime.session.stdout``) on a real child's stdout: lines however the pipe cuts them, in
order and through the guard; the end of the pipe, an oversized line and a close."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
import pytest
from mcp.shared.message import SessionMessage

from mcp_runtime.limits import MAX_MESSAGE_BYTES
from mcp_runtime.session.stdio import _read_pipe
from mcp_runtime.session.stdout import STDOUT_CHUNK, StdoutStream
from mcp_runtime.session.upstream_guard import UpstreamGuard


class _Overflow:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


async def _child(code: str) -> tuple[anyio.abc.Process, StdoutStream, anyio.Event, _Overflow, object]:
    reader, pipe, child_end = await _read_pipe(STDOUT_CHUNK)
    try:
        process = await anyio.open_process([sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=child_end)
    finally:
        os.close(child_end)
    exited, overflow = anyio.Event(), _Overflow()
    return process, StdoutStream(reader, UpstreamGuard(), exited, overflow), exited, overflow, pipe


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
        process, stream, exited, overflow, pipe = await _child(PIECES)
        async with process:
            ids = []
            async for item in stream:
                assert isinstance(item, SessionMessage)
                ids.append(item.message.id)
            assert ids == list(range(300))  # blank lines between them are skipped
            assert exited.is_set() and overflow.calls == 0
            with pytest.raises(anyio.EndOfStream):
                await stream.receive()
        pipe.close()

    anyio.run(main)


@pytest.mark.parametrize("tail", [b"", b"\\n"])
def test_a_line_over_the_limit_ends_the_stream_after_the_lines_before_it(tail: bytes) -> None:
    """Whether or not the oversized line has ended when it is read."""
    code = (
        "import sys\n"
        "sys.stdout.buffer.write(b'{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\\n')\n"
        f"sys.stdout.buffer.write(b'[' + b' ' * {MAX_MESSAGE_BYTES + 10} + b'{tail.decode()}')\n"
        "sys.stdout.buffer.write(b'{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\\n')\n"
    )

    async def main() -> None:
        process, stream, exited, overflow, pipe = await _child(code)
        async with process:
            items = [item async for item in stream]
            assert [item.message.id for item in items] == [1]
            assert overflow.calls == 1 and exited.is_set()
            pipe.close()  # the child may still be writing: it sees a broken pipe
            await process.wait()

    anyio.run(main)


def test_a_closed_stream_refuses_reads() -> None:
    async def main() -> None:
        process, stream, exited, _, pipe = await _child("print('{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}')")
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
        process, stream, _, _, pipe = await _child(STORM)
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
