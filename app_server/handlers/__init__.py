"""Method name → route. Handlers are thin: typed params in, an owner called, a typed result out.

Importing the handler modules runs their ``@method`` registrations; the check below then refuses to load
a dispatch table that leaves a catalog method without a handler.
"""

from __future__ import annotations

from app_server.handlers import apps, oauth, runtime, servers, threads
from app_server.handlers.registry import InlineRoute, Route, check_complete, routes

__all__ = ["ROUTES", "InlineRoute", "Route", "apps", "oauth", "runtime", "servers", "threads"]

ROUTES: dict[str, Route] = routes()
check_complete(ROUTES)
