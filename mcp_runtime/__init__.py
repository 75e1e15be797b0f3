"""The MCP side of the daemon, and the only door ``app_server`` uses into it.

Public: the two owners of session slots (the management manager and a thread's runtime), the server store and
its file writer, the config policy, the app importers/syncers, OAuth logins and credentials, the limits, the
event sink type, the task spawner the daemon hands the owners, and resource previews. Everything else
(``mcp_runtime._*``) is internal. Names load on first use (PEP 562), so ``import mcp_runtime`` stays cheap:
answering ``initialize`` must not import the MCP SDK.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from mcp_runtime import _safe_fs as safe_fs
from mcp_runtime._clock import utc_now

if TYPE_CHECKING:
    from mcp_runtime._elicitation_answer import CANCELLED, resolve_answer
    from mcp_runtime._policy import ConfigPolicy, policy, set_policy
    from mcp_runtime._preview import preview_content
    from mcp_runtime._projection import Kind, Stored, clip, media, projection_text, stored, utf8
    from mcp_runtime._tasks import Spawner, TaskHandle
    from mcp_runtime.apps import plan_import, sync_app
    from mcp_runtime.config import (
        check_server,
        normalized,
        parse_server_config,
        patched,
        redacted,
        restore_redacted,
        to_wire,
    )
    from mcp_runtime.events import EventSink
    from mcp_runtime.limits import MAX_CONFIG_BYTES, MAX_MESSAGE_BYTES, MAX_SERVERS
    from mcp_runtime.management import McpClientManager
    from mcp_runtime.oauth import DEFAULT_TIMEOUT_S, CredentialStore, OAuthLogins, login_client, step_up_scopes
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
    "ConfigPolicy": "mcp_runtime._policy",
    "patched": "mcp_runtime.config",
    "policy": "mcp_runtime._policy",
    "restore_redacted": "mcp_runtime.config",
    "set_policy": "mcp_runtime._policy",
    "CANCELLED": "mcp_runtime._elicitation_answer",
    "resolve_answer": "mcp_runtime._elicitation_answer",
    "Kind": "mcp_runtime._projection",
    "Stored": "mcp_runtime._projection",
    "clip": "mcp_runtime._projection",
    "media": "mcp_runtime._projection",
    "projection_text": "mcp_runtime._projection",
    "stored": "mcp_runtime._projection",
    "utf8": "mcp_runtime._projection",
    "plan_import": "mcp_runtime.apps",
    "sync_app": "mcp_runtime.apps",
    "CredentialStore": "mcp_runtime.oauth",
    "OAuthLogins": "mcp_runtime.oauth",
    "DEFAULT_TIMEOUT_S": "mcp_runtime.oauth",
    "login_client": "mcp_runtime.oauth",
    "step_up_scopes": "mcp_runtime.oauth",
    "MAX_CONFIG_BYTES": "mcp_runtime.limits",
    "MAX_MESSAGE_BYTES": "mcp_runtime.limits",
    "MAX_SERVERS": "mcp_runtime.limits",
    "preview_content": "mcp_runtime._preview",
}

__all__ = [
    "CANCELLED",
    "DEFAULT_TIMEOUT_S",
    "MAX_CONFIG_BYTES",
    "MAX_MESSAGE_BYTES",
    "MAX_SERVERS",
    "AskCallback",
    "ConfigPolicy",
    "ConfigStore",
    "CredentialStore",
    "EventSink",
    "Kind",
    "McpClientManager",
    "McpThreadRuntime",
    "OAuthLogins",
    "Spawner",
    "Stored",
    "StoredServer",
    "TaskHandle",
    "check_server",
    "clip",
    "kill_live_children",
    "login_client",
    "media",
    "normalized",
    "parse_server_config",
    "patched",
    "plan_import",
    "policy",
    "preview_content",
    "projection_text",
    "redacted",
    "resolve_answer",
    "restore_redacted",
    "safe_fs",
    "set_policy",
    "step_up_scopes",
    "stored",
    "sync_app",
    "to_wire",
    "utc_now",
    "utf8",
    "write_atomic",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def kill_live_children() -> bool:
    """Kill the process group of every stdio server still running; False when none was ever spawned (the
    transport module was never loaded, so nothing is imported just to find that out)."""
    transport = sys.modules.get("mcp_runtime.transport")
    if transport is None:
        return False
    transport.kill_live_groups()
    return True
