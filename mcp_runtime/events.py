"""The one seam through which the MCP side publishes client notifications.

``mcp_runtime`` never knows what a client connection is: it hands ``(method, params)`` to a sink that
``app_server`` provides. The sink must not block (the app side queues).
"""

from __future__ import annotations

from collections.abc import Callable

from protocol.base import WireModel

EventSink = Callable[[str, WireModel], None]
