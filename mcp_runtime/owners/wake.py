"""A thread's server that reconnects (woken from sleep, or after a loss) may come back with another catalog (SPEC §4,
§16): the change is announced before anything answered by the new connection, so a host never offers tools the
server no longer has, and a woken call is checked against the catalog the host is told about."""

from __future__ import annotations

from mcp_runtime.events import EventSink
from mcp_runtime.session.state import ConnectionState
from protocol.resource import ResourcesUpdated
from protocol.tool import ToolsUpdated


def announce_changes(
    sink: EventSink, name: str, thread_id: str | None, kept: ConnectionState | None, now: ConnectionState
) -> None:
    """``mcp:tools_updated`` / ``mcp:resources_updated`` for what differs between the kept catalog and the new one."""
    if kept is None or kept.status == "notStarted":
        return
    if [tool.model_dump() for tool in kept.tools] != [tool.model_dump() for tool in now.tools]:
        sink("mcp:tools_updated", ToolsUpdated(server=name, thread_id=thread_id))
    if (kept.resources, kept.resource_templates) != (now.resources, now.resource_templates):
        sink("mcp:resources_updated", ResourcesUpdated(server=name, thread_id=thread_id))
