"""The spool on its own (``app_server.wire.spool``): output past a connection's memory waits on disk, in order,
never more of it than ``SPOOL_CAP``; what does not fit waits in memory, and all of it reaches the client."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from app_server.wire import spool as spool_module


def test_the_spool_never_holds_more_than_its_cap_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spool_module, "SPOOL_CAP", 4096)
    chunks = [bytes([i]) * 1000 for i in range(20)]
    received: list[bytes] = []
    most_on_disk = 0

    async def main() -> None:
        nonlocal most_on_disk
        open_room = anyio.Event()

        async def room() -> None:
            await open_room.wait()

        spool = spool_module.Spool(tmp_path, received.append, room)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(spool.run)
            for chunk in chunks:
                spool.append(chunk)
                await anyio.sleep(0.01)  # let the spill worker write what it may
                if spool._file is not None:  # the client is deaf: nothing leaves the file yet
                    most_on_disk = max(most_on_disk, os.fstat(spool._file.fileno()).st_size)
            open_room.set()
            with anyio.fail_after(10):
                await spool.emptied()
            tasks.cancel_scope.cancel()

    anyio.run(main)
    assert 0 < most_on_disk <= 4096, most_on_disk
    assert b"".join(received) == b"".join(chunks), "every byte, in order"
