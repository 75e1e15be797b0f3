"""The dispatch table and the protocol catalog agree, and a disagreement cannot load."""

from __future__ import annotations

import inspect

import pytest

from app_server.handlers import MODULES, load_all
from app_server.handlers import route as route_of
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

pytestmark = pytest.mark.daemon

ROUTES = load_all()


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


def test_a_method_loads_its_handler_module_only() -> None:
    """A host's first list does not wait for the thread, app and OAuth handlers to import."""
    import subprocess
    import sys

    from testing.daemon_client import ROOT

    code = (
        "import sys; from app_server.handlers import route; route('mcpServer/list'); "
        "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('app_server.handlers.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["['paging',", "'registry',", "'servers']"]
    assert route_of("thread/start").handler.__module__ == "app_server.handlers.threads"
    assert {ROUTES[name].handler.__module__.rsplit(".", 1)[1] for name in ROUTES} == set(MODULES)
