"""The dispatch table and the protocol catalog agree, and a disagreement cannot load."""

from __future__ import annotations

import inspect

import pytest

from app_server.handlers import ROUTES
from app_server.handlers.registry import (
    CONNECTION_METHODS,
    AwaitedRoute,
    InlineRoute,
    RegistrationError,
    check_complete,
    method,
)
from protocol.catalog import METHODS, RETIRED
from protocol.server import ServerListParams, ServerNameParams


def test_every_catalog_method_has_exactly_its_catalog_model_and_a_handler():
    assert set(ROUTES) == set(METHODS) - CONNECTION_METHODS
    for name, route in ROUTES.items():
        assert route.method == name
        assert route.params is METHODS[name].params


def test_routes_know_which_handlers_wait():
    for route in ROUTES.values():
        assert isinstance(route, AwaitedRoute) == inspect.iscoroutinefunction(route.handler)
    assert isinstance(ROUTES["mcpServer/list"], InlineRoute)
    assert isinstance(ROUTES["mcpServer/tool/call"], AwaitedRoute)


def test_a_second_registration_of_a_method_is_refused():
    def list_again(ctx, params):
        raise AssertionError("never dispatched")

    with pytest.raises(RegistrationError, match="registered twice"):
        method("mcpServer/list", ServerListParams)(list_again)
    assert ROUTES["mcpServer/list"].handler is not list_again


@pytest.mark.parametrize("name", ["mcpServer/nothing", "initialize", *sorted(RETIRED)[:3]])
def test_a_handler_for_a_method_outside_the_catalog_is_refused(name):
    with pytest.raises(RegistrationError, match="not a dispatchable method"):
        method(name, ServerListParams)


def test_a_params_model_other_than_the_catalogs_is_refused():
    with pytest.raises(RegistrationError, match="takes ServerListParams"):
        method("mcpServer/list", ServerNameParams)


def test_a_catalog_method_without_a_handler_fails_the_check():
    partial = {name: route for name, route in ROUTES.items() if name != "thread/read"}
    with pytest.raises(RegistrationError, match="thread/read"):
        check_complete(partial)
    check_complete(ROUTES)
