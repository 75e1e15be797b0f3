"""The pydantic-free initialize path must agree with the catalog's models."""

from __future__ import annotations

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
