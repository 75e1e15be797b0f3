"""URL-mode elicitation end to end (SPEC §16) through the real daemon, against an SDK-built server: forwarded to the
calling connection with the URL checked, the server's completion notice relayed, and a ``-32042`` refusal typed."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from testing.daemon_client import Daemon
from testing.fixtures import FIXTURES, NODE_MODULES, everything_config
from testing.threads import START_TIMEOUT, call, error_of, start_call, start_thread

pytestmark = pytest.mark.daemon

SAFE_URL = "https://login.example.test/authorize?flow=1"


def url_server() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FIXTURES / "url_elicitation.py")], "protocol": "2025-11-25"}


def test_a_url_elicitation_reaches_the_caller_and_its_completion_follows(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"urls": url_server()})
    call_id = start_call(daemon, thread_id, "urls", "visit", {"url": SAFE_URL})
    request = daemon.wait_server_request("mcpServer/elicitation/request", timeout=START_TIMEOUT)
    params = request["params"]
    assert (params["mode"], params["url"], params["elicitationId"]) == ("url", SAFE_URL, "visit-1")
    assert params["message"] == "Sign in to continue" and "requestedSchema" not in params
    daemon.answer(request["id"], {"action": "accept"})
    completed = daemon.wait_notification("mcpServer/elicitation/completed", timeout=START_TIMEOUT)
    assert completed == {"threadId": thread_id, "elicitationId": "visit-1"}
    assert daemon.wait_response(call_id, timeout=START_TIMEOUT)["result"]["content"][0]["text"] == "accept"


@pytest.mark.parametrize(
    "url",
    [
        "http://pay.example.test/checkout",
        "https://user:secret@login.example.test/",
        "javascript:alert(1)",
        "https://login.example.test/" + "a" * 4100,
    ],
)
def test_an_unsafe_url_is_declined_without_asking(daemon: Daemon, url: str) -> None:
    thread_id = start_thread(daemon, mcpServers={"urls": url_server()})
    assert call(daemon, thread_id, "urls", "visit", {"url": url})["content"][0]["text"] == "decline"
    assert not daemon.notifications("serverRequest/resolved")


def test_a_call_refused_until_a_url_is_visited_is_typed(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"urls": url_server()})
    response = daemon.wait_response(start_call(daemon, thread_id, "urls", "needs_visit", {}), timeout=START_TIMEOUT)
    error = error_of(response)
    assert (error.code, error.reason) == (-32014, "urlElicitationRequired")
    assert error.data["elicitations"] == [
        {"mode": "url", "url": SAFE_URL, "elicitationId": "needs-1", "message": "Authorize the app"}
    ]
    call(daemon, thread_id, "urls", "finish", {"elicitation_id": "needs-1"})
    completed = daemon.wait_notification("mcpServer/elicitation/completed", timeout=START_TIMEOUT)
    assert completed == {"threadId": thread_id, "elicitationId": "needs-1"}


@pytest.mark.skipif(
    not (NODE_MODULES / "@modelcontextprotocol" / "server-everything").exists(), reason="npm servers not installed"
)
def test_server_everything_offers_its_url_tool_and_its_refusal_is_typed(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"ev": everything_config()})
    arguments = {"url": "https://example.com/flow", "errorPath": True}
    error = error_of(daemon.wait_response(start_call(daemon, thread_id, "ev", "trigger-url-elicitation", arguments),
                                          timeout=START_TIMEOUT))  # fmt: skip
    assert error.reason == "urlElicitationRequired"
    assert [e["url"] for e in error.data["elicitations"]] == ["https://modelcontextprotocol.io"]
