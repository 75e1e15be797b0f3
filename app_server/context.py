"""What a handler is given besides its params: the daemon (the state every connection shares) and the request's
own connection and id. Below the processor and the handlers, above the daemon it names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app_server.daemon import Daemon
    from app_server.wire.connection import ClientConnection
    from protocol.jsonrpc import RequestId


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What a handler is given besides its params."""

    daemon: Daemon
    connection: ClientConnection
    request_id: RequestId
