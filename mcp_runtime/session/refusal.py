"""The refusal rule: a response the daemon refuses on a server's behalf (an HTTP redirect, a 401, an OAuth policy
refusal, a reply past the size cap) reaches the SDK as a synthetic JSON-RPC error for that one request, and
``REASON_MARKER`` in its ``data`` carries the typed reason back to the runtime (``errors``), so the request fails
typed and the connection lives on.
"""

from __future__ import annotations

from protocol.encoding import compact
from protocol.jsonrpc import REASON_CODES, AppError

REASON_MARKER = "mcpAppServerReason"
"""Key in a synthetic JSON-RPC error's ``data`` naming the typed reason the transport refused a response for."""


def refusal_body(error: AppError) -> bytes:
    """The synthetic JSON-RPC error a transport answers in place of a response it refused (an HTTP redirect, a 401,
    an OAuth policy refusal): the SDK reads it as the request's error, and ``REASON_MARKER`` carries the typed
    reason and its details back to the runtime."""
    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": int(REASON_CODES[error.reason]),
            "message": error.message,
            "data": {REASON_MARKER: error.reason, **error.details},
        },
    }
    return compact(body)
