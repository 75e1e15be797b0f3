"""The pydantic-free initialize path must agree with the catalog's models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from app_server import handshake
from protocol.lifecycle import InitializeParams, InitializeResult

CASES: list[Any] = [
    {"clientInfo": {"name": "app", "version": "1.2"}},
    {"clientInfo": {"name": "app", "version": "1", "title": "App"}},
    {"clientInfo": {"name": "app", "version": "1"}, "capabilities": {}},
    {"clientInfo": {"name": "app", "version": "1"}, "capabilities": {"optOutNotificationMethods": ["a", "b"]}},
    {"clientInfo": {"name": "", "version": "1"}},
    {"clientInfo": {"name": "app"}},
    {"clientInfo": {"name": "app", "version": 1}},
    {"clientInfo": {"name": "app", "version": "1", "extra": True}},
    {"clientInfo": {"name": "app", "version": "1"}, "capabilities": {"optOutNotificationMethods": "all"}},
    {"clientInfo": {"name": "app", "version": "1"}, "capabilities": {"optOutNotificationMethods": [1]}},
    {"clientInfo": {"name": "app", "version": "1"}, "capabilities": {"other": 1}},
    {"clientInfo": {"name": "a", "version": "1"}, "capabilities": {"sampling": {}, "optOutNotificationMethods": ["a"]}},
    {"clientInfo": {"name": "app", "version": "1"}, "capabilities": {"opt_out_notification_methods": ["a"]}},
    {"clientInfo": {"name": "app", "version": "1"}, "capabilities": {"optOutNotificationMethods": None}},
    {"clientInfo": {"name": "app", "version": "1"}, "capabilities": None},
    {"clientInfo": {"name": "app", "version": "1", "title": None}},
    {"client_info": {"name": "app", "version": "1"}},
    {"clientInfo": "app"},
    {},
    [],
    "initialize",
]


def _model_accepts(params: Any) -> InitializeParams | None:
    try:
        return InitializeParams.model_validate(params)
    except ValidationError:
        return None


@pytest.mark.parametrize("params", CASES)
def test_quick_check_accepts_only_what_the_model_accepts_and_reads_it_the_same(params: Any) -> None:
    quick = handshake.quick_params(params)
    model = _model_accepts(params)
    if quick is None:
        return  # the model decides (and gives the typed error) for anything the quick check does not accept
    assert model is not None, f"quick path accepted params the model rejects: {params!r}"
    capabilities = model.capabilities
    opt_outs = frozenset(capabilities.opt_out_notification_methods or []) if capabilities else frozenset()
    assert quick == (model.client_info.name, model.client_info.version, opt_outs)


def test_plain_params_take_the_quick_path() -> None:
    assert handshake.quick_params(CASES[0]) == ("app", "1.2", frozenset())
    assert handshake.quick_params(CASES[3]) == ("app", "1", frozenset({"a", "b"}))


def test_unknown_capabilities_are_ignored_on_both_paths() -> None:
    params = {"clientInfo": {"name": "app", "version": "1"}, "capabilities": {"experimental": {"x": 1}, "roots": True}}
    assert handshake.quick_params(params) == ("app", "1", frozenset())
    model = InitializeParams.model_validate(params)
    assert model.capabilities is not None and model.capabilities.opt_out_notification_methods is None


def test_quick_result_is_a_valid_initialize_result() -> None:
    result = handshake.result(
        version="0.1.0", protocol_version="x", client=("app", "1"), data_dir="/d", methods=["m"], notifications=["n"]
    )
    assert InitializeResult.model_validate(result).model_dump(mode="json") == result


def test_empty_store_list_agrees_with_the_store_and_the_model(tmp_path: Path) -> None:
    from mcp_runtime import ConfigStore
    from mcp_runtime.storage.store import STORE_FILE
    from protocol.server import ServerListResult

    assert handshake.STORE_FILE == STORE_FILE
    quick = handshake.empty_server_list({}, tmp_path)
    assert quick is not None and ConfigStore(tmp_path).list() == []
    assert ServerListResult(data=[]).model_dump(mode="json", exclude_none=True) == quick
    assert handshake.empty_server_list(None, tmp_path) == quick
    assert handshake.empty_server_list({"limit": 1}, tmp_path) is None  # params the model must judge
    (tmp_path / STORE_FILE).write_text('{"version": 1, "mcpServers": {}}')
    assert handshake.empty_server_list({}, tmp_path) is None  # a store file: the store answers


def test_policy_transports_match_the_protocol() -> None:
    from mcp_runtime.config.policy import TRANSPORTS
    from protocol.config import TRANSPORTS as PROTOCOL_TRANSPORTS

    assert TRANSPORTS == PROTOCOL_TRANSPORTS


def test_autostart_waits_for_initialized_and_starts_the_servers_enabled_then(tmp_path: Path) -> None:
    from tests.daemon_client import running_daemon
    from tests.fixtures import fixture_config

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    with running_daemon(data_dir) as first:
        first.initialize()
        first.request("mcpServer/create", {"name": "on", "config": fixture_config()})
        first.request("mcpServer/create", {"name": "off", "config": fixture_config(enabled=False)})
    with running_daemon(data_dir) as second:
        second.request("initialize", {"clientInfo": {"name": "tests", "version": "0"}})
        assert second.request("mcpServer/list")["data"][0]["name"] == "off"  # served; nothing started yet
        assert second.notifications("mcpServer/startupStatus/updated") == []
        second.notify("initialized")
        second.wait_notification("mcpServer/startupStatus/updated", lambda p: p["status"] == "ready", timeout=60)
        second.request("mcpServer/create", {"name": "later", "config": fixture_config()})
        statuses = second.request("mcpServerStatus/list")["data"]
        assert {row["name"] for row in statuses if row["runtimeStatus"] == "connected"} == {"on"}
        assert {p["name"] for p in second.notifications("mcpServer/startupStatus/updated")} == {"on"}
