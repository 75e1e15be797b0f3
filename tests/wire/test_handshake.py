"""The pydantic-free ``initialize`` answer agrees with the catalog's models, and autostart follows ``initialized``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from app_server.wire import handshake
from protocol.lifecycle import InitializeParams, InitializeResult

pytestmark = pytest.mark.daemon

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
    {"clientInfo": {"name": "app", "version": "1"}, "capabilities": {"mcpApps": {}}},
    {"clientInfo": {"name": "app", "version": "1"}, "capabilities": {"mcpApps": {"future": 1}}},
    {"clientInfo": {"name": "app", "version": "1"}, "capabilities": {"mcpApps": True}},
    {"clientInfo": {"name": "app", "version": "1"}, "capabilities": {"mcpApps": None}},
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
    apps = capabilities is not None and capabilities.mcp_apps is not None
    assert quick == (model.client_info.name, model.client_info.version, opt_outs, apps)


def test_plain_params_take_the_quick_path() -> None:
    assert handshake.quick_params(CASES[0]) == handshake.Client("app", "1.2", frozenset(), renders_views=False)
    assert handshake.quick_params(CASES[3]) == ("app", "1", frozenset({"a", "b"}), False)
    apps = {"clientInfo": {"name": "app", "version": "1"}, "capabilities": {"mcpApps": {}}}
    assert handshake.quick_params(apps) == ("app", "1", frozenset(), True)


def test_unknown_capabilities_are_ignored_on_both_paths() -> None:
    params = {"clientInfo": {"name": "app", "version": "1"}, "capabilities": {"experimental": {"x": 1}, "roots": True}}
    assert handshake.quick_params(params) == ("app", "1", frozenset(), False)
    model = InitializeParams.model_validate(params)
    assert model.capabilities is not None and model.capabilities.opt_out_notification_methods is None


_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
_IDS = st.integers(min_value=-(2**70), max_value=2**70) | _TEXT


@settings(max_examples=200, deadline=None)
@given(
    request_id=_IDS,
    name=_TEXT.filter(bool),
    version=_TEXT,
    data_dir=st.text(max_size=20) | st.text(max_size=5).map(lambda path: path + "\udcff"),  # undecodable bytes
)
def test_the_initialize_line_is_the_catalog_result_as_the_connection_writes_it(
    request_id: int | str, name: str, version: str, data_dir: str
) -> None:
    """The pydantic-free answer is byte for byte the ``InitializeResult`` model's, as ``ClientConnection`` writes
    a model result (a data dir that is not valid Unicode included)."""
    from protocol.catalog import METHODS, NOTIFICATIONS
    from protocol.constants import NAME, PROTOCOL_VERSION, VERSION
    from protocol.encoding import compact, model_json

    model = InitializeResult.model_validate(
        {
            "serverInfo": {"name": NAME, "version": VERSION},
            "protocolVersion": PROTOCOL_VERSION,
            "userAgent": f"{NAME}/{VERSION} ({name}/{version})",
            "dataDir": data_dir,
            "methods": sorted(set(METHODS) - {"initialize"}),
            "notifications": sorted(NOTIFICATIONS),
            "policy": {"source": None, "restricts": []},
            "secretStore": {"kind": "keychain", "backend": "Secret Service"},
        }
    )
    written = b'{"jsonrpc":"2.0","id":' + compact(request_id) + b',"result":' + model_json(model) + b"}\n"
    store = {"kind": "keychain", "backend": "Secret Service"}
    client = handshake.Client(name, version, frozenset(), renders_views=False)
    assert handshake.initialize_line(request_id, client, data_dir, store) == written


def test_autostart_waits_for_initialized_and_starts_the_servers_enabled_then(tmp_path: Path) -> None:
    from testing.daemon_client import running_daemon
    from testing.fixtures import fixture_config

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
        # created after autostart and disabled: nothing starts it (an enabled one would start at create)
        second.request("mcpServer/create", {"name": "later", "config": fixture_config(enabled=False)})
        statuses = second.request("mcpServerStatus/list")["data"]
        assert {row["name"] for row in statuses if row["runtimeStatus"] == "connected"} == {"on"}
        assert {p["name"] for p in second.notifications("mcpServer/startupStatus/updated")} == {"on"}
