"""Black-box tests of the wire: framing, handshake, typed errors, concurrency limits, cancel, shutdown."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from protocol.catalog import METHODS, NOTIFICATIONS, RETIRED
from testing.daemon_client import Daemon, DaemonError, running_daemon

pytestmark = pytest.mark.daemon

STDIO = {"command": "python3", "args": ["-c", "pass"]}


def test_initialize_answers_catalog_and_data_dir(data_dir: Path) -> None:
    with running_daemon(data_dir) as d:
        result = d.initialize()
        assert result["serverInfo"]["name"] == "mcp-app-server"
        assert set(result["methods"]) == set(METHODS) - {"initialize"}
        assert set(result["notifications"]) == set(NOTIFICATIONS)
        assert result["dataDir"] == str(data_dir)
        assert not set(result["methods"]) & set(RETIRED)


def test_request_before_initialize_is_refused(data_dir: Path) -> None:
    with running_daemon(data_dir) as d:
        with pytest.raises(DaemonError) as err:
            d.request("mcpServer/list")
        assert (err.value.code, err.value.reason) == (-32002, "notInitialized")
        d.initialize()
        assert d.request("mcpServer/list") == {"data": []}


def test_second_initialize_is_refused(daemon: Daemon) -> None:
    with pytest.raises(DaemonError) as err:
        daemon.request("initialize", {"clientInfo": {"name": "x", "version": "1"}})
    assert (err.value.code, err.value.reason) == (-32600, "alreadyInitialized")


def test_bad_json_line_gets_parse_error_with_null_id(daemon: Daemon) -> None:
    daemon.send_raw(b'{"id": 7, "method": \n')
    response = daemon.wait_for(lambda m: m.get("error", {}).get("code") == -32700)
    assert response["id"] is None
    assert response["error"]["data"]["reason"] == "parseError"
    assert daemon.request("mcpServer/list") == {"data": []}


@pytest.mark.parametrize("line", [b"[1,2]", b'{"id": {"x": 1}, "method": "mcpServer/list"}', b'{"id": 3}'])
def test_invalid_envelopes_are_typed(daemon: Daemon, line: bytes) -> None:
    daemon.send_raw(line + b"\n")
    response = daemon.wait_for(lambda m: "error" in m)
    assert response["error"]["data"]["reason"] == "invalidRequest"
    assert daemon.request("mcpServer/list") == {"data": []}


def test_line_over_4_mib_is_discarded_and_daemon_keeps_serving(daemon: Daemon) -> None:
    payload = b'{"id": 99, "method": "mcpServer/list", "params": {"x": "' + b"a" * (4 * 1024 * 1024 + 10) + b'"}}\n'
    daemon.send_raw(payload)
    response = daemon.wait_for(lambda m: m.get("error", {}).get("data", {}).get("reason") == "messageTooLarge")
    assert response["id"] is None and response["error"]["code"] == -32600
    assert daemon.request("mcpServer/list") == {"data": []}


def test_line_just_under_the_limit_is_parsed(daemon: Daemon) -> None:
    padding = "a" * (4 * 1024 * 1024 - 200)
    with pytest.raises(DaemonError) as err:
        daemon.request("mcpServer/list", {"cursor": padding})
    assert err.value.reason == "invalidParams"


@pytest.mark.parametrize(("name", "replacement"), sorted(RETIRED.items()))
def test_retired_names_answer_retired_with_replacement(daemon: Daemon, name: str, replacement: str | None) -> None:
    with pytest.raises(DaemonError) as err:
        daemon.request(name, {})
    assert (err.value.code, err.value.reason) == (-32601, "retired")
    assert err.value.data.get("replacement") == replacement


def test_unknown_method(daemon: Daemon) -> None:
    with pytest.raises(DaemonError) as err:
        daemon.request("mcpServer/explode", {})
    assert (err.value.code, err.value.reason) == (-32601, "methodNotFound")


def test_invalid_params_carry_paths(daemon: Daemon) -> None:
    with pytest.raises(DaemonError) as err:
        daemon.request("mcpServer/create", {"name": "a", "config": {"command": "x", "startupTimeoutMs": 0}})
    assert (err.value.code, err.value.reason) == (-32602, "invalidParams")
    paths = [e["path"] for e in err.value.data["errors"]]
    assert any(p.endswith("startupTimeoutMs") for p in paths)
    with pytest.raises(DaemonError) as err:
        daemon.request("mcpServer/list", [1, 2])
    assert err.value.reason == "invalidParams"


def test_responses_correlate_by_string_and_integer_ids(daemon: Daemon) -> None:
    daemon.start_request("mcpServer/list", {}, request_id="abc")
    daemon.start_request("mcpServer/list", {}, request_id=12)
    assert daemon.wait_response("abc")["result"] == {"data": []}
    assert daemon.wait_response(12)["result"] == {"data": []}


def test_more_than_256_in_flight_is_overloaded(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "slow", "config": {"command": "python3", "args": ["-c", "pass"]}})
    # Stdin is written in one burst, so the daemon reads every request before any handler finishes.
    burst = b"".join(
        json.dumps({"id": i, "method": "mcpServerStatus/list", "params": {}}).encode() + b"\n" for i in range(400)
    )
    daemon.send_raw(burst)
    reasons = []
    for i in range(400):
        response = daemon.wait_response(i)
        reasons.append(response.get("error", {}).get("data", {}).get("reason", "ok"))
    assert set(reasons) <= {"ok", "overloaded"}
    assert daemon.request("mcpServer/list")["data"][0]["name"] == "slow"


def test_cancel_request_answers_cancelled(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "hang", "config": _hang_config()})
    request_id = daemon.start_request("mcpServer/start", {"name": "hang"})
    daemon.wait_notification("mcpServer/startupStatus/updated", lambda p: p["status"] == "starting")
    daemon.notify("$/cancelRequest", {"id": request_id})
    response = daemon.wait_response(request_id)
    assert response["error"]["code"] == -32800
    assert response["error"]["data"]["reason"] == "cancelled"
    # The worker that ran the cancelled request serves again, alongside new ones for a burst.
    ids = [daemon.start_request("mcpServerStatus/list", {}) for _ in range(40)]
    assert all(daemon.wait_response(i)["result"]["data"][0]["name"] == "hang" for i in ids)


def _hang_config() -> dict[str, object]:
    from testing.fixtures import script

    return {"command": script("hang_at_start.py")[0], "args": script("hang_at_start.py")[1:]}


def test_opted_out_notifications_are_not_sent(data_dir: Path) -> None:
    with running_daemon(data_dir) as d:
        d.initialize(optOutNotificationMethods=["mcpServer/startupStatus/updated"])
        d.request("mcpServer/create", {"name": "hang", "config": {**_hang_config(), "startupTimeoutMs": 500}})
        with pytest.raises(DaemonError):
            d.request("mcpServer/start", {"name": "hang"})
        assert d.notifications("mcpServer/startupStatus/updated") == []


def test_stdin_eof_exits_zero_and_nothing_on_stdout_but_protocol(data_dir: Path) -> None:
    d = Daemon(data_dir)
    d.initialize()
    d.request("mcpServer/create", {"name": "a", "config": STDIO})
    assert d.close() == 0
    assert not [m for m in d._messages if "__unparsable__" in m]
    for line in d.stderr().splitlines():
        json.loads(line)


def test_sigterm_exits_zero(data_dir: Path) -> None:
    d = Daemon(data_dir)
    d.initialize()
    d.process.send_signal(signal.SIGTERM)
    assert d.process.wait(15) == 0
    d.close()


def test_invalid_initialize_params_are_typed_and_the_handshake_can_be_retried(data_dir: Path) -> None:
    with running_daemon(data_dir) as d:
        with pytest.raises(DaemonError) as err:
            d.request("initialize", {"clientInfo": {"name": "", "version": "1"}})
        assert err.value.reason == "invalidParams"
        assert any(e["path"].startswith("clientInfo") for e in err.value.data["errors"])
        result = d.request("initialize", {"client_info": {"name": "snake", "version": "1"}})
        assert result["userAgent"].endswith("(snake/1)")
