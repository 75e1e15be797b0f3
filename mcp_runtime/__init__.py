"""The MCP side of the daemon, and the only door ``app_server`` uses into it.

Public: the two owners of session slots (the management manager and a thread's runtime), the server store and
its file writer, the config policy, the app importers/syncers, OAuth logins and credentials, the limits, the
event sink type, the task spawner the daemon hands the owners, and resource previews. Everything else
(``mcp_runtime._*``) is internal. Names load on first use (PEP 562), so ``import mcp_runtime`` stays cheap:
answering ``initialize`` must not import the MCP SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_runtime._preview import preview_content
    from mcp_runtime._tasks import Spawner, TaskHandle
    from mcp_runtime.apps import plan_import, sync_app
    from mcp_runtime.config import check_server, normalized, parse_server_config, redacted, to_wire
    from mcp_runtime.events import EventSink
    from mcp_runtime.limits import MAX_MESSAGE_BYTES, MAX_SERVERS
    from mcp_runtime.management import McpClientManager
    from mcp_runtime.oauth import CredentialStore, OAuthLogins
    from mcp_runtime.store import ConfigStore, StoredServer, write_atomic
    from mcp_runtime.thread_runtime import AskCallback, McpThreadRuntime

_EXPORTS: dict[str, str] = {
    "McpClientManager": "mcp_runtime.management",
    "McpThreadRuntime": "mcp_runtime.thread_runtime",
    "AskCallback": "mcp_runtime.thread_runtime",
    "Spawner": "mcp_runtime._tasks",
    "TaskHandle": "mcp_runtime._tasks",
    "EventSink": "mcp_runtime.events",
    "ConfigStore": "mcp_runtime.store",
    "StoredServer": "mcp_runtime.store",
    "write_atomic": "mcp_runtime.store",
    "check_server": "mcp_runtime.config",
    "normalized": "mcp_runtime.config",
    "parse_server_config": "mcp_runtime.config",
    "redacted": "mcp_runtime.config",
    "to_wire": "mcp_runtime.config",
    "plan_import": "mcp_runtime.apps",
    "sync_app": "mcp_runtime.apps",
    "CredentialStore": "mcp_runtime.oauth",
    "OAuthLogins": "mcp_runtime.oauth",
    "MAX_MESSAGE_BYTES": "mcp_runtime.limits",
    "MAX_SERVERS": "mcp_runtime.limits",
    "preview_content": "mcp_runtime._preview",
}

__all__ = [
    "MAX_MESSAGE_BYTES",
    "MAX_SERVERS",
    "AskCallback",
    "ConfigStore",
    "CredentialStore",
    "EventSink",
    "McpClientManager",
    "McpThreadRuntime",
    "OAuthLogins",
    "Spawner",
    "StoredServer",
    "TaskHandle",
    "check_server",
    "normalized",
    "parse_server_config",
    "plan_import",
    "preview_content",
    "redacted",
    "sync_app",
    "to_wire",
    "write_atomic",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
