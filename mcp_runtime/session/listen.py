"""The 2026-07-28 ``subscriptions/listen`` stream of one slot: list changes and resource subscriptions.

That era has no ``resources/subscribe``: the stream is re-opened whenever the subscribed URIs change, and
``relisten`` returns once the server acknowledged (or refused) that generation, so a ``subscribe`` answers
only when the server honours it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import anyio
import structlog

from mcp_runtime.session.requests import subscribe_legacy
from protocol.jsonrpc import AppError

if TYPE_CHECKING:
    from mcp import Client

log = structlog.get_logger("mcp_runtime.listen")

LISTEN_RETRY_S = 1.0


class ListenStream:
    """Subscribed URIs and the stream that carries them; ``run`` lives in the slot's session task group."""

    def __init__(self, server: str, uris: Iterable[str] = ()) -> None:
        self._server = server
        self.uris: set[str] = set(uris)
        self._wanted = 0
        self._done = -1
        self._error: BaseException | None = None
        self._changed = anyio.Event()
        self._progress = anyio.Event()

    async def opened(self) -> None:
        """The first stream was acknowledged or refused: no change is missed after the slot is ready."""
        while self._done < 0:
            await self._progress.wait()

    async def run(self, client: Client) -> None:
        from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
        from mcp.shared.exceptions import MCPError

        caps = client.session.server_capabilities
        while True:
            generation = self._wanted
            changed = self._changed = anyio.Event()
            uris = sorted(self.uris)
            try:
                async with client.listen(
                    tools_list_changed=caps is not None and caps.tools is not None,
                    prompts_list_changed=caps is not None and caps.prompts is not None,
                    resources_list_changed=caps is not None and caps.resources is not None,
                    resource_subscriptions=uris,
                ) as subscription:
                    honored = set(subscription.honored.resource_subscriptions or ())
                    refused = [uri for uri in uris if uri not in honored]
                    self._settle(generation, self._refusal(refused[0]) if refused else None)
                    async with anyio.create_task_group() as tg:

                        async def drain(scope: anyio.CancelScope = tg.cancel_scope) -> None:
                            async for _event in subscription:
                                pass  # events reach the slot through the session's tee
                            scope.cancel()

                        tg.start_soon(drain)
                        await changed.wait()
                        tg.cancel_scope.cancel()
                    if not changed.is_set():
                        await anyio.sleep(LISTEN_RETRY_S)  # the server ended the stream: re-listen, not spin
            except (MCPError, SubscriptionLost, ListenNotSupportedError, TimeoutError) as exc:
                log.debug("listen_failed", server=self._server, error=type(exc).__name__)
                self._settle(generation, exc)
                await changed.wait()

    def _refusal(self, uri: str) -> AppError:
        """The server acknowledged the stream without this URI: it does not subscribe to it. No MCP error was
        answered (so not ``upstreamError``): the daemon fails closed rather than pretend to be subscribed."""
        message = f"server {self._server} does not accept a subscription to this resource"
        return AppError("unsupported", message, server=self._server, uri=uri)

    def _settle(self, generation: int, error: BaseException | None) -> None:
        self._done = generation
        self._error = error
        self._progress.set()
        self._progress = anyio.Event()

    async def relisten(self, timeout_s: float) -> BaseException | None:
        """Re-open the stream with the current URIs; the server's refusal (or None) once it answered."""
        self._wanted += 1
        generation = self._wanted
        self._changed.set()
        with anyio.fail_after(timeout_s):
            while self._done < generation:
                await self._progress.wait()
        return self._error

    async def _relisten_quietly(self, timeout_s: float) -> BaseException | None:
        try:
            return await self.relisten(timeout_s)
        except TimeoutError as exc:
            return exc

    async def subscribe(self, client: Client, uri: str, *, modern: bool, timeout_s: float) -> None:
        """2025 era: ``resources/subscribe``; 2026 era: re-open the stream with the URI and wait for its ack.

        Raises the raw failure (an SDK error, a timeout, the server's refusal) for the slot to type.
        """
        if not modern:
            await subscribe_legacy(client, uri, subscribe=True)
            self.uris.add(uri)
            return
        self.uris.add(uri)
        error = await self._relisten_quietly(timeout_s)
        if error is not None:
            self.uris.discard(uri)
            await self._relisten_quietly(timeout_s)
            raise error

    async def unsubscribe(self, client: Client, uri: str, *, modern: bool, timeout_s: float) -> None:
        if uri not in self.uris:
            return
        self.uris.discard(uri)
        if not modern:
            await subscribe_legacy(client, uri, subscribe=False)
            return
        await self._relisten_quietly(timeout_s)
