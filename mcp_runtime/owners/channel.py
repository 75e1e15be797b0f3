"""A client connection's elicitation channel (SPEC §7): the thread runtime asks the connection that made a call,
judges its answer and reports the judgement to it, through this one object; the connection only carries lines.

The answer is judged once (``resolve_answer``): the client is told the same judgement (``serverRequest/resolved``)
that goes upstream, so it is never told one thing while the server gets another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import anyio

from mcp_runtime.owners.elicitation import CANCELLED, Ending, Resolution, resolve_answer
from protocol.elicitation import ElicitationRequest
from protocol.jsonrpc import AppError

__all__ = ["ClientPeer", "ElicitationChannel"]


class ClientPeer(Protocol):
    """What a channel needs of its connection: send a server request and wait for that connection's answer, and
    send it a notification (``app_server``'s ``ClientConnection`` is one)."""

    async def request(self, method: str, params: Any, request_id: str) -> dict[str, Any]: ...

    def notify(self, method: str, params: Any) -> int: ...


class ElicitationChannel:
    """The elicitations of one client connection: asked of that connection only, answered by their server-request
    id on it."""

    def __init__(self, peer: ClientPeer, request_ids: Callable[[], str]) -> None:
        self._peer = peer
        self._request_ids = request_ids

    def notify(self, method: str, params: Any) -> int:
        """A notification to this connection only (a URL elicitation's completion notice)."""
        return self._peer.notify(method, params)

    async def ask(self, request: ElicitationRequest, ending: Ending) -> Resolution:
        """Ask the connection; its answer judged against the form, and the judgement reported to it (answered,
        connection closed, or cut off with the call: ``ending`` says how) before it goes upstream."""
        request_id = self._request_ids()
        resolution = CANCELLED
        try:
            response = await self._peer.request("mcpServer/elicitation/request", request, request_id)
            if "result" in response:
                resolution = resolve_answer(response["result"], request.requested_schema)
        except AppError:
            resolution = CANCELLED
        except anyio.get_cancelled_exc_class():
            resolution = ending()
            raise
        finally:
            self._peer.notify("serverRequest/resolved", resolution.resolved(request.thread_id, request_id))
        return resolution
