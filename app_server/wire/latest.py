"""The last word of a keyed notification is never lost with a deaf client's backlog (SPEC §1): a status update
dropped because the client was not reading is kept, one per key (a newer one replaces it, one sent takes it back),
and sent once the client has read what was waiting. A host that reads again learns how each server ended up."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import anyio

KEYED = {"mcpServer/startupStatus/updated": ("threadId", "name")}
"""The notifications whose last one per key matters, and the params fields that make their key."""

Key = tuple[str, ...]


def key_of(method: str, params_json: bytes) -> Key | None:
    """The key of a keyed notification (None for one that is not keyed)."""
    fields = KEYED.get(method)
    if fields is None:
        return None
    try:
        params = json.loads(params_json)
    except ValueError:
        return None
    return (method, *(str(params.get(name)) for name in fields)) if isinstance(params, dict) else None


class LatestHeld:
    """The dropped notifications still owed to one connection, the latest per key, in the order they were held."""

    def __init__(self) -> None:
        self._held: dict[Key, bytes] = {}
        self._owed: anyio.Event | None = None

    def hold(self, key: Key, line: bytes) -> None:
        self._held.pop(key, None)
        self._held[key] = line
        if self._owed is not None:
            self._owed.set()

    def sent(self, key: Key) -> None:
        """A newer notification for ``key`` reached the client: the held one is stale."""
        self._held.pop(key, None)

    async def resend(self, room: Callable[[], Awaitable[None]], send: Callable[[bytes], None]) -> None:
        """For the connection's life: whenever something is held, wait for ``room`` (the client has read what
        was waiting), then send what is held."""
        while True:
            while not self._held:
                self._owed = anyio.Event()
                await self._owed.wait()
            await room()
            held, self._held = self._held, {}
            for line in held.values():
                send(line)
