"""The SDK private members ``mcp_runtime._sdk_compat`` relies on still exist with the shapes it uses.

An SDK upgrade that moves or renames one of them fails here, by name, instead of at run time in a session.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

from mcp_runtime import _sdk_compat


def _owner(path: str) -> type:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("member", sorted(_sdk_compat.PRIVATE_MEMBERS))
def test_private_member_exists(member: str) -> None:
    owner_path, parameters = _sdk_compat.PRIVATE_MEMBERS[member]
    owner = _owner(owner_path)
    attribute = member.rpartition(".")[2]
    if not parameters:
        # An instance attribute: set in __init__, so look for the assignment there.
        assert f"self.{attribute} =" in inspect.getsource(owner.__init__), f"{member} is no longer set"
        return
    function = getattr(owner, attribute, None)
    assert callable(function), f"{member} is gone from the SDK"
    assert tuple(inspect.signature(function).parameters) == parameters, f"{member} changed its signature"


def test_public_members_the_compat_layer_builds_on() -> None:
    from mcp.client.session import ClientSession

    assert tuple(inspect.signature(ClientSession.send_discover).parameters) == ("self", "version")
    assert tuple(inspect.signature(ClientSession.adopt).parameters) == ("self", "result")
    send = inspect.signature(ClientSession.send_request).parameters
    assert {"request", "result_type", "request_read_timeout_seconds", "progress_callback"} <= set(send)


def test_probe_bounded_client_overrides_the_session_builder() -> None:
    from mcp import Client

    bounded = _sdk_compat.probe_bounded_client()
    assert issubclass(bounded, Client)
    assert bounded._build_session is not Client._build_session
    assert inspect.signature(bounded._build_session).parameters.keys() == {"self", "exit_stack"}


def test_call_result_adapter_parses_both_result_kinds() -> None:
    adapter = _sdk_compat.call_result_adapter()
    result = adapter.validate_python({"content": [{"type": "text", "text": "hi"}]})
    assert type(result).__name__ == "CallToolResult"


def test_send_request_checks_a_result_against_its_version_before_the_result_type() -> None:
    """2025-era tool results are taken through ``checked_result_adapter`` (a plain dict): that is only sound
    while ``send_request`` validates the raw result against the negotiated version first."""
    from mcp.client.session import ClientSession
    from mcp_types.methods import validate_server_result
    from pydantic import ValidationError

    assert "validate_server_result" in ClientSession.send_request.__code__.co_names
    with pytest.raises(ValidationError):
        validate_server_result("tools/call", "2025-11-25", {"content": "not a list"})
    raw = {"content": [{"type": "text", "text": "hi"}]}
    assert _sdk_compat.checked_result_adapter().validate_python(raw) == raw


def test_http_transport_still_words_its_parse_failures_as_matched() -> None:
    import mcp.client.streamable_http as streamable_http

    source = inspect.getsource(streamable_http)
    for prefix in _sdk_compat.HTTP_PARSE_FAILURES:
        assert f'f"{prefix}{{exc}}"' in source, f"the SDK no longer says {prefix!r}"
    wording = "Failed to parse SSE message: 1 validation error for X\n  Invalid JSON: bad [type=json_invalid, input=y]"
    assert _sdk_compat.http_parse_failure(-32700, wording) == "Invalid JSON: bad"
    assert _sdk_compat.http_parse_failure(-32700, "a parse error of the server's own") is None
