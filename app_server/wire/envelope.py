"""The one place a JSON-RPC envelope is spelt: every line the daemon writes (a result, an error, a notification, a
server request) is built here around a body already encoded, so there is one spelling to read and to change.

Standard library only (the ids and methods come encoded or plain): the start-up reader answers ``initialize``
with it before orjson or pydantic load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from protocol.jsonrpc import AppError, RequestId


def result(id_json: bytes, body: bytes) -> bytes:
    """A response line. Joined, not ``%``-formatted: ``bytes % (big,)`` over-allocates and shrinks a fresh buffer,
    which for a large body costs page faults that ``join`` (sized once) does not."""
    return b"".join((b'{"jsonrpc":"2.0","id":', id_json, b',"result":', body, b"}\n"))


def error(request_id: RequestId | None, refusal: AppError) -> bytes:
    """An error response line (``request_id`` None when the request's id could not be read)."""
    from protocol.encoding import line

    return line({"jsonrpc": "2.0", "id": request_id, "error": refusal.to_error()})


def notification(method: str, params_json: bytes) -> bytes:
    """A notification line (the method is one of the catalog's names: nothing in it needs escaping)."""
    return b'{"jsonrpc":"2.0","method":"%s","params":%s}\n' % (method.encode(), params_json)


def request(request_id: str, method: str, params_json: bytes) -> bytes:
    """A server request line (its id is the daemon's own ``srv-N``)."""
    return b'{"jsonrpc":"2.0","id":"%s","method":"%s","params":%s}\n' % (
        request_id.encode(),
        method.encode(),
        params_json,
    )
