"""The collection after ended sessions: the ends of a burst share one."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

import anyio

from mcp_runtime.session.collector import EndedSessions
from mcp_runtime.tasks import Spawner


@contextmanager
def _full_collections_only_when_asked() -> Iterator[list[int]]:
    """Automatic collection off; yields the list the generation-2 collections are counted in."""
    seen: list[int] = []

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == 2:
            seen.append(info["collected"])

    gc.callbacks.append(callback)
    gc.disable()
    try:
        yield seen
    finally:
        gc.enable()
        gc.callbacks.remove(callback)


def test_a_burst_of_ends_shares_one_collection() -> None:
    ended = EndedSessions()

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            spawner = Spawner(tg)
            for _ in range(16):
                ended.ended(spawner)
            await ended.collected()

    with _full_collections_only_when_asked() as seen:
        anyio.run(main)
    assert len(seen) == 1
