"""What an HTTP server said when it refused a request: its status and the start of its body, so that a failed
start names them ("HTTP 400: Server not initialized") instead of a generic closed connection; and the plain words
for a server that could not be reached ("connection refused")."""

from __future__ import annotations

import errno
import re
from dataclasses import dataclass
from typing import Any

ERROR_BODY_BYTES = 64 * 1024
"""An error body is read whole up to this (it is handed on to the SDK as read); longer ones are cut."""
BODY_EXCERPT_CHARS = 300
_SESSION_REFUSED = re.compile(r"session[ -]?id|session not found|unknown session|invalid session|session expired", re.I)
"""How servers say they do not know a session ("No valid session ID provided", "Missing session ID", "Session not
found"); an error that merely names a tool's own session (``create_session``) is not one."""
"""What a status row quotes of the body: enough to say why, never a page."""


@dataclass(frozen=True)
class Refusal:
    status: int
    body: str

    def describe(self) -> str:
        """``HTTP <status>: <what it said>``: a JSON-RPC error body by its message, any other body by its start."""
        said = " ".join(_error_message(self.body).split())[:BODY_EXCERPT_CHARS]
        return f"HTTP {self.status}: {said}" if said else f"HTTP {self.status}"


class RefusalLog:
    """The last non-2xx answer of one connection's HTTP client (what its handshake failure is reported with)."""

    def __init__(self) -> None:
        self.last: Refusal | None = None

    def note(self, status: int, body: bytes) -> None:
        self.last = Refusal(status, body.decode("utf-8", errors="replace"))


def session_gone(status: int, body: bytes) -> bool:
    """Whether a refusal of a request that carried a session id says the server no longer knows that session: HTTP
    404 (the spec's word for an ended session) or a 400 whose error says so (what servers built on the SDK's examples
    answer, npm server-everything among them, once restarted). The request was not run."""
    if status == 404:
        return True
    return status == 400 and _SESSION_REFUSED.search(_error_message(body.decode("utf-8", errors="replace"))) is not None


async def read_capped(response: Any) -> bytes:
    """An error response's body, decoded, up to ``ERROR_BODY_BYTES`` (the rest is not read)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= ERROR_BODY_BYTES:
            break
    return b"".join(chunks)[:ERROR_BODY_BYTES]


def unreachable(leaf: BaseException, url: str) -> tuple[str, str]:
    """Why a server could not be reached, in plain words, and its ``detail``: refused, not resolved, timed out."""
    import httpx2

    origin = url.split("/", 3)[:3]
    where = "/".join(origin)
    chain: list[BaseException] = []
    cause: BaseException | None = leaf
    while cause is not None and len(chain) < 8:
        chain.append(cause)
        chain.extend(getattr(cause, "exceptions", None) or ())
        cause = cause.__cause__ or cause.__context__
    for inner in chain:
        if isinstance(inner, ConnectionRefusedError) or getattr(inner, "errno", None) == errno.ECONNREFUSED:
            return f"connection refused: nothing listens at {where}", "connectionRefused"
    text = " ".join(str(inner) for inner in chain).lower()
    if "refused" in text or "all connection attempts failed" in text:  # anyio's words for every address refusing
        return f"connection refused: nothing listens at {where}", "connectionRefused"
    if "name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text:
        return f"the server's host name could not be resolved ({where})", "nameNotResolved"
    if isinstance(leaf, httpx2.TimeoutException):
        return f"the server did not answer in time ({where})", "connectTimeout"
    return f"could not reach the server at {where}: {type(leaf).__name__}", "unreachable"


def _error_message(body: str) -> str:
    import json

    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return body
    error = parsed.get("error") if isinstance(parsed, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else body
