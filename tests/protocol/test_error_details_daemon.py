"""Error details as the typed client reads them (``protocol/errors.py``), one key per fact, through the daemon: an
unknown server is named by ``server`` wherever it is met; a NUL in a command gives ``errors``; a subscription the
server does not accept is a reason of its own (``upstreamError`` always carries the server's code and message); and
an elicitation form outside MCP's primitive fields is declined upstream, never shown to a client."""

from __future__ import annotations

import json
from typing import Any

import pytest

from testing.daemon_client import Daemon, DaemonError
from testing.fixtures import fixture_config
from testing.threads import START_TIMEOUT, start_call, start_thread

pytestmark = pytest.mark.daemon


def refused(daemon: Daemon, method: str, params: dict[str, Any]) -> DaemonError:
    with pytest.raises(DaemonError) as err:
        daemon.request(method, params, timeout=START_TIMEOUT)
    return err.value


def test_an_unknown_server_is_named_by_server_everywhere(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config(enabled=False)})
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    attempts: list[tuple[str, dict[str, Any]]] = [
        ("mcpServer/list", {"names": ["nope"]}),
        ("mcpServer/update", {"name": "nope", "patch": {"enabled": False}}),
        ("mcpServer/delete", {"name": "nope"}),
        ("mcpServer/enabled/set", {"name": "nope", "enabled": True}),
        ("mcpServer/start", {"name": "nope"}),
        ("mcpServerStatus/list", {"serverName": "nope"}),
        ("thread/start", {"servers": ["nope"]}),
        ("mcpServer/tool/call", {"threadId": thread_id, "server": "nope", "tool": "echo"}),
    ]
    for method, params in attempts:
        err = refused(daemon, method, params)
        assert (err.code, err.reason) == (-32010, "unknownServer"), method
        assert err.data["server"] == "nope" and "name" not in err.data, (method, err.data)


def test_nul_in_command_or_args_names_each_field(daemon: Daemon) -> None:
    config = {"command": "no\0de", "args": ["fine", "b\0d"]}
    err = refused(daemon, "mcpServer/create", {"name": "n", "config": config})
    assert (err.code, err.reason) == (-32602, "invalidParams")
    assert err.data["errors"] == [
        {"path": "config.command", "message": "must not contain NUL"},
        {"path": "config.args.1", "message": "must not contain NUL"},
    ]


@pytest.mark.parametrize("protocol", ["2026-07-28", "2025-11-25"])
def test_a_subscription_the_server_does_not_accept(daemon: Daemon, protocol: str) -> None:
    daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config(protocol=protocol)})
    daemon.request("mcpServer/start", {"name": "fx"}, timeout=START_TIMEOUT)
    uri = "fixture://unsubscribable/thing"
    err = refused(daemon, "mcpResource/subscribe", {"server": "fx", "uri": uri})
    if protocol == "2026-07-28":  # left out of the listen acknowledgement: no MCP error was answered
        assert (err.code, err.reason, err.data["server"], err.data["uri"]) == (-32012, "unsupported", "fx", uri)
    else:  # the server answered resources/subscribe with an error: its code and message
        assert (err.code, err.reason, err.data["server"]) == (-32014, "upstreamError", "fx")
        assert err.data["mcpCode"] == -32602 and "cannot be subscribed" in err.data["mcpMessage"]
    assert daemon.request("mcpResource/subscribe", {"server": "fx", "uri": "fixture://static/hello"}) == {}


NESTED = {"type": "object", "properties": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}}}
PRIMITIVE = {"type": "object", "properties": {"city": {"type": "string", "title": "City"}}, "required": ["city"]}


@pytest.mark.parametrize("protocol", ["2026-07-28", "2025-11-25"])
def test_a_form_outside_the_primitive_fields_is_declined_upstream(daemon: Daemon, protocol: str) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config("--form-tool", protocol=protocol)})
    free_list = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}
    for form in (NESTED, free_list, {"type": "object", "properties": {"n": {"type": "string", "title": None}}}):
        call_id = start_call(daemon, thread_id, "fx", "ask_form", {"form": json.dumps(form)})
        result = daemon.wait_response(call_id, timeout=START_TIMEOUT)["result"]
        assert json.loads(result["content"][0]["text"]) == {"action": "decline"}, form
    with daemon._cond:  # every message the daemon has sent (none consumed them)
        assert not [m for m in daemon._messages if m.get("method") == "mcpServer/elicitation/request"]
    # A form of primitive fields still reaches the client, as sent.
    call_id = start_call(daemon, thread_id, "fx", "ask_form", {"form": json.dumps(PRIMITIVE)})
    request = daemon.wait_server_request("mcpServer/elicitation/request", timeout=START_TIMEOUT)
    assert request["params"]["requestedSchema"]["properties"] == PRIMITIVE["properties"]
    daemon.answer(request["id"], {"action": "accept", "content": {"city": "Oslo"}})
    result = daemon.wait_response(call_id, timeout=START_TIMEOUT)["result"]
    assert json.loads(result["content"][0]["text"]) == {"action": "accept"}
