"""One registration per method: its params model and its handler, checked against the protocol catalog.

``protocol.catalog`` is the only list of methods and models; this module binds a handler to each of them.
A name the catalog does not list, a params model that is not the catalog's, or a second registration of
the same name raises at import, so a dispatch table that disagrees with the catalog can never load.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import BaseModel

from protocol.catalog import METHODS

if TYPE_CHECKING:
    from app_server.context import RequestContext
    from app_server.wire.connection import EncodedResult

P = TypeVar("P", bound=BaseModel)
T = TypeVar("T")

InlineHandler = Callable[["RequestContext", Any], "BaseModel | EncodedResult"]
"""Never waits (store and cached-state reads): the processor answers it without a task switch."""
AwaitedHandler = Callable[["RequestContext", Any], Awaitable["BaseModel | EncodedResult"]]
"""Waits on I/O: the processor runs it in its own cancellable task."""
Handler = InlineHandler | AwaitedHandler

CONNECTION_METHODS = frozenset({"initialize"})
"""Catalog methods the processor answers itself (the handshake); no handler registers them."""


class RegistrationError(RuntimeError):
    """The handlers and the catalog disagree; raised at import, never at run time."""


@dataclass(frozen=True)
class InlineRoute:
    method: str
    params: type[BaseModel]
    handler: InlineHandler


@dataclass(frozen=True)
class AwaitedRoute:
    method: str
    params: type[BaseModel]
    handler: AwaitedHandler


Route = InlineRoute | AwaitedRoute
_Fn = Callable[["RequestContext", P], T]

_routes: dict[str, Route] = {}


def method(name: str, params: type[P]) -> Callable[[_Fn[P, T]], _Fn[P, T]]:
    """Register the decorated function as the handler of catalog method ``name``, parsing ``params``."""
    spec = METHODS.get(name)
    if spec is None or name in CONNECTION_METHODS:
        raise RegistrationError(f"{name} is not a dispatchable method of protocol.catalog")
    if spec.params is not params:
        raise RegistrationError(f"{name} takes {spec.params.__name__} in the catalog, not {params.__name__}")

    def register(handler: _Fn[P, T]) -> _Fn[P, T]:
        if name in _routes:
            raise RegistrationError(f"{name} is registered twice")
        if inspect.iscoroutinefunction(handler):
            _routes[name] = AwaitedRoute(name, params, cast(AwaitedHandler, handler))
        else:
            _routes[name] = InlineRoute(name, params, cast(InlineHandler, handler))
        return handler

    return register


def check_complete(routes: dict[str, Route]) -> None:
    """Every dispatchable catalog method has a handler (extra names were refused at registration)."""
    missing = sorted(set(METHODS) - CONNECTION_METHODS - set(routes))
    if missing:
        raise RegistrationError(f"catalog methods without a handler: {', '.join(missing)}")


def routes() -> dict[str, Route]:
    """The registrations made so far (a copy)."""
    return dict(_routes)


def registered(name: str) -> Route | None:
    """The route registered for ``name`` so far, if any."""
    return _routes.get(name)
