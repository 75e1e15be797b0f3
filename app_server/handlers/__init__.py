"""Method name → route. Handlers are thin: typed params in, an owner called, a typed result out.

A handler module is imported when a method it serves is first dispatched (its ``@method`` registrations run then),
so a host's first request waits for its own module only. ``load_all`` imports the rest and refuses a dispatch
table that leaves a catalog method without a handler.
"""

from __future__ import annotations

import importlib

from app_server.handlers.registry import InlineRoute, RegistrationError, Route, check_complete, registered, routes

__all__ = ["MODULES", "InlineRoute", "Route", "load_all", "route"]

MODULES = ("servers", "runtime", "threads", "importers", "oauth", "installs", "tasks")
"""The handler modules, the ones serving a host's first requests (the server list, status) first."""


def route(method: str) -> Route:
    """The route of a dispatchable catalog method, importing handler modules in order until one registers it."""
    modules = iter(MODULES)
    while (found := registered(method)) is None:
        module = next(modules, None)
        if module is None:
            raise RegistrationError(f"no handler module registers {method}")
        importlib.import_module(f"{__name__}.{module}")
    return found


def load_all() -> dict[str, Route]:
    """Every route, every handler module imported; ``RegistrationError`` when a catalog method has none."""
    for module in MODULES:
        importlib.import_module(f"{__name__}.{module}")
    table = routes()
    check_complete(table)
    return table
