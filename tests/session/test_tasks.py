"""``Spawner``: owner tasks live in the caller's task group, are cancelled by scope, and never end the group."""

from __future__ import annotations

import anyio
import pytest
from structlog.testing import capture_logs

from mcp_runtime import Spawner

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_cancel_and_wait_ends_only_that_task() -> None:
    other_done = anyio.Event()
    async with anyio.create_task_group() as tg:
        spawner = Spawner(tg)
        forever = spawner.spawn(anyio.sleep_forever, name="forever")
        other = spawner.spawn(other_done.wait, name="other")
        await forever.cancel_and_wait()
        assert forever.done and not other.done
        other_done.set()
        await other.wait()
    assert other.done


async def test_a_failing_task_does_not_end_the_group_and_logs_its_traceback() -> None:
    async def boom() -> None:
        raise RuntimeError("bug")

    with capture_logs() as logged:
        async with anyio.create_task_group() as tg:
            spawner = Spawner(tg)
            failed = spawner.spawn(boom, name="boom")
            await failed.wait()
            survivor = spawner.spawn(anyio.sleep, 0, name="after")
            await survivor.wait()
    assert failed.done and survivor.done
    assert [(entry["event"], entry["task"], entry["exc_info"]) for entry in logged] == [
        ("background_task_failed", "boom", True)
    ]


async def test_cancelled_before_it_runs() -> None:
    ran = False

    async def mark() -> None:
        nonlocal ran
        await anyio.sleep(0)
        ran = True

    async with anyio.create_task_group() as tg:
        handle = Spawner(tg).spawn(mark, name="mark")
        handle.cancel()
        await handle.wait()
    assert handle.done and not ran
