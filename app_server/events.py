"""The typed notification bus: app-scoped events go to every initialized connection, thread-scoped
ones to that thread's subscribers. It is the ``EventSink`` the MCP runtime publishes into."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from app_server.wire.connection import ClientConnection
from protocol.catalog import NOTIFICATIONS

if TYPE_CHECKING:
    from protocol.base import WireModel


class EventBus:
    def __init__(self) -> None:
        self.connections: set[ClientConnection] = set()
        self.thread_subscribers: defaultdict[str, set[ClientConnection]] = defaultdict(set)

    def attach(self, connection: ClientConnection) -> None:
        self.connections.add(connection)

    def detach(self, connection: ClientConnection) -> None:
        self.connections.discard(connection)
        for subscribers in self.thread_subscribers.values():
            subscribers.discard(connection)

    def subscribe(self, thread_id: str, connection: ClientConnection) -> None:
        self.thread_subscribers[thread_id].add(connection)

    def publish(self, method: str, params: WireModel) -> None:
        """Deliver a catalog notification: thread-scoped ones to the thread's subscribers, others to all."""
        thread_id = getattr(params, "thread_id", None)
        self._deliver(method, params, self.thread_subscribers.get(thread_id, set()) if thread_id else self.connections)

    def broadcast(self, method: str, params: WireModel) -> None:
        """Deliver to every initialized connection even when the event names a thread (OAuth completion)."""
        self._deliver(method, params, self.connections)

    def _deliver(self, method: str, params: WireModel, targets: set[ClientConnection]) -> None:
        """Serialized once, shared by every recipient."""
        if method not in NOTIFICATIONS:
            raise ValueError(f"{method} is not a catalog notification")
        if not targets:
            return
        params_json = params.model_dump_json().encode()
        for connection in tuple(targets):
            connection.notify_encoded(method, params_json)
