"""Reading a client's messages in the order they arrived, up to a response: for rules about what comes first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from testing.daemon_client import DEFAULT_TIMEOUT, JsonLinesClient

RETIRED_EVENTS = ("mcp:server_started", "mcp:server_stopped", "mcp:server_error", "mcp:oauth_completed")


def until_response(
    client: JsonLinesClient, request_id: Any, wanted: Callable[[dict[str, Any]], bool], timeout: float = DEFAULT_TIMEOUT
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The ``wanted`` messages that arrived before the response to ``request_id`` (in arrival order), and that
    response; each is consumed, so an earlier message can never be taken for a later one."""

    def is_response(message: dict[str, Any]) -> bool:
        return message.get("id") == request_id and "method" not in message

    before: list[dict[str, Any]] = []
    while True:
        message = client.wait_for(lambda m: is_response(m) or wanted(m), timeout)
        if is_response(message):
            return before, message
        before.append(message)


def startup_statuses(name: str) -> Callable[[dict[str, Any]], bool]:
    """Management ``mcpServer/startupStatus/updated`` notifications of server ``name``."""
    return lambda m: (
        m.get("method") == "mcpServer/startupStatus/updated"
        and "id" not in m
        and m["params"]["name"] == name
        and m["params"]["threadId"] is None
    )


def retired_events(client: JsonLinesClient) -> list[dict[str, Any]]:
    """Retired notifications received and not consumed (nothing consumes them, so: every one ever received)."""
    return [params for method in RETIRED_EVENTS for params in client.notifications(method)]
