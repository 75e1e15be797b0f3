"""Method name → handler. Handlers are thin: typed params in, an owner called, a typed result out."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from app_server.handlers import apps, oauth, runtime, servers, threads

Handler = Callable[[Any, Any], Awaitable[Any]]

HANDLERS: dict[str, Handler] = {
    **servers.ROUTES,
    **apps.ROUTES,
    **runtime.ROUTES,
    **threads.ROUTES,
    **oauth.ROUTES,
}
