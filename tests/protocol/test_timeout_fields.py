"""Every timeout field is a JSON integer in range: a boolean, a numeric string or a float is ``invalidParams``
naming the field, never coerced into a deadline (SPEC §5, §6)."""

from __future__ import annotations

from typing import Any

import pytest

from testing.daemon_client import Daemon, DaemonError

pytestmark = pytest.mark.daemon

NOT_INTEGERS = [True, "1000", 1000.0]
STDIO = {"command": "tool"}


def _refused(daemon: Daemon, method: str, params: dict[str, Any]) -> list[str]:
    with pytest.raises(DaemonError) as err:
        daemon.request(method, params)
    assert (err.value.code, err.value.reason) == (-32602, "invalidParams"), err.value
    return [issue["path"] for issue in err.value.data["errors"]]


@pytest.mark.parametrize("value", NOT_INTEGERS, ids=repr)
def test_timeouts_take_integers_only(daemon: Daemon, value: Any) -> None:
    for field in ("startupTimeoutMs", "toolTimeoutMs"):
        paths = _refused(daemon, "mcpServer/create", {"name": "s", "config": {**STDIO, field: value}})
        assert paths == [f"config.{field}"]
        thread = {"mcpServers": {"s": {**STDIO, field: value}}}
        assert _refused(daemon, "thread/start", thread) == [f"mcpServers.s.{field}"]
    call = {"threadId": "thr_x", "server": "s", "tool": "t", "timeoutMs": value}
    assert _refused(daemon, "mcpServer/tool/call", call) == ["timeoutMs"]
    assert _refused(daemon, "mcpServer/oauth/login", {"name": "s", "timeoutSecs": value}) == ["timeoutSecs"]
    assert daemon.request("mcpServer/list")["data"] == []


def test_integer_timeouts_are_taken(daemon: Daemon) -> None:
    config = {**STDIO, "startupTimeoutMs": 1000, "toolTimeoutMs": 2000}
    record = daemon.request("mcpServer/create", {"name": "s", "config": config})
    stored = record["server"]["config"]
    assert (stored["startupTimeoutMs"], stored["toolTimeoutMs"]) == (1000, 2000)
