"""URL-mode elicitation in a thread (SPEC §16): which URLs may reach a person, who hears a completion notice, and
a call the server refused until a URL is visited (``-32042``).

The daemon never opens a URL; it hands one to the calling host only when it is one a browser may safely be sent
to (https, or http to this machine; no userinfo to disguise the host; a bounded length), and declines the rest
upstream.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from mcp_runtime.config.rules import is_loopback_host
from protocol.base import WireModel
from protocol.elicitation import ElicitationCompleted
from protocol.jsonrpc import AppError

MAX_URL_BYTES = 4096
MAX_KEPT = 64
"""Elicitation ids remembered per thread for their completion notice (a notice may come after the call ended)."""
URL_ELICITATION_REQUIRED = -32042

Notify = Callable[[str, WireModel], object]
"""Sends one catalog notification to the connection that made the call."""


def acceptable_url(url: Any) -> bool:
    """https, or http to a loopback host; no userinfo; at most 4 KiB."""
    if not isinstance(url, str) or len(url.encode()) > MAX_URL_BYTES:
        return False
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises on an invalid port
    except ValueError:
        return False
    if not host or "@" in parts.netloc:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and is_loopback_host(host))


class UrlElicitations:
    """The connections waiting for completion notices of one thread's URL elicitations, by elicitation id."""

    def __init__(self, thread_id: str) -> None:
        self._thread_id = thread_id
        self._waiting: OrderedDict[tuple[str, str], Notify] = OrderedDict()

    def remember(self, server: str, elicitation_id: str, notify: Notify | None) -> None:
        if notify is None:
            return
        self._waiting[(server, elicitation_id)] = notify
        self._waiting.move_to_end((server, elicitation_id))
        while len(self._waiting) > MAX_KEPT:
            self._waiting.popitem(last=False)

    def completed(self, server: str, elicitation_id: str) -> None:
        """The server's ``notifications/elicitation/complete``: told once, to the connection that was shown it."""
        notify = self._waiting.pop((server, elicitation_id), None)
        if notify is not None:
            completed = ElicitationCompleted(thread_id=self._thread_id, elicitation_id=elicitation_id)
            notify("mcpServer/elicitation/completed", completed)

    def required(self, server: str, error: AppError, notify: Notify | None) -> AppError:
        """A call answered ``-32042``: ``urlElicitationRequired`` with the elicitations a host may show (each one's
        completion notice then goes to ``notify``); URLs that fail the checks are left out."""
        listed = error.details.get("elicitations")  # as the server sent them
        elicitations: list[dict[str, str]] = []
        for item in listed if isinstance(listed, list) else []:
            if not isinstance(item, dict) or not acceptable_url(item.get("url")):
                continue
            elicitation_id, message = item.get("elicitationId"), item.get("message")
            if not isinstance(elicitation_id, str) or not isinstance(message, str):
                continue
            elicitations.append(
                {"mode": "url", "url": item["url"], "elicitationId": elicitation_id, "message": message[:4096]}
            )
            self.remember(server, elicitation_id, notify)
        message = f"{server} asks for a URL to be visited before this call"
        return AppError("urlElicitationRequired", message, server=server, elicitations=elicitations)
