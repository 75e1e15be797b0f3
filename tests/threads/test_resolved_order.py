"""``serverRequest/resolved`` reaches the asked connection before the tool call's own answer, on every path
(issue 26.3, SPEC §7): answered, timed out, or cancelled with ``$/cancelRequest`` while the elicitation waits, in
both protocol eras. Read in arrival order up to the call's response (``testing.ordering.until_response``)."""

from __future__ import annotations

from typing import Any

import pytest

from testing.daemon_client import Daemon
from testing.fixtures import fixture_config
from testing.ordering import until_response
from testing.threads import START_TIMEOUT, call, start_call, start_thread

pytestmark = pytest.mark.daemon

ERAS = ["2026-07-28", "2025-11-25"]


def resolved_of(request_id: str) -> Any:
    return lambda m: m.get("method") == "serverRequest/resolved" and m["params"]["requestId"] == request_id


def asking(daemon: Daemon, protocol: str, **extra: Any) -> tuple[str, Any, dict[str, Any]]:
    """A thread whose call of ``ask`` waits on an elicitation the client has been sent and not answered."""
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config(protocol=protocol)})
    assert call(daemon, thread_id, "fx", "echo", {"text": "up"})["content"][0]["text"] == "up"
    call_id = start_call(daemon, thread_id, "fx", "ask", {"question": "waiting"}, **extra)
    request = daemon.wait_server_request("mcpServer/elicitation/request", timeout=START_TIMEOUT)
    return thread_id, call_id, request


@pytest.mark.parametrize("protocol", ERAS)
def test_an_open_form_is_not_cut_by_the_call_timeout(daemon: Daemon, protocol: str) -> None:
    """``timeoutMs`` counts the server's time (SPEC §16): a form held three times as long is still answered."""
    _, call_id, request = asking(daemon, protocol, timeoutMs=500)
    with pytest.raises(TimeoutError):
        daemon.wait_for(lambda m: m.get("id") == call_id or resolved_of(request["id"])(m), timeout=1.5)
    daemon.answer(request["id"], {"action": "decline"})
    before, response = until_response(daemon, call_id, resolved_of(request["id"]), START_TIMEOUT)
    assert response["result"]["content"][0]["text"] == '{"action": "decline"}'
    assert [m["params"]["action"] for m in before] == ["decline"]


@pytest.mark.parametrize("protocol", ERAS)
def test_resolved_before_the_cancelled_error(daemon: Daemon, protocol: str) -> None:
    thread_id, call_id, request = asking(daemon, protocol)
    daemon.notify("$/cancelRequest", {"id": call_id})
    before, response = until_response(daemon, call_id, resolved_of(request["id"]), START_TIMEOUT)
    assert (response["error"]["code"], response["error"]["data"]["reason"]) == (-32800, "cancelled")
    assert [m["params"] for m in before] == [{"threadId": thread_id, "requestId": request["id"], "action": "cancel"}]
    assert call(daemon, thread_id, "fx", "echo", {"text": "still"})["content"][0]["text"] == "still"


@pytest.mark.parametrize("protocol", ERAS)
def test_resolved_before_the_result_when_answered(daemon: Daemon, protocol: str) -> None:
    _, call_id, request = asking(daemon, protocol)
    daemon.answer(request["id"], {"action": "decline"})
    before, response = until_response(daemon, call_id, resolved_of(request["id"]), START_TIMEOUT)
    assert response["result"]["content"][0]["text"] == '{"action": "decline"}'
    assert [m["params"]["action"] for m in before] == ["decline"]
