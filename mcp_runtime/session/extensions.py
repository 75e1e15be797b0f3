"""The MCP extensions the daemon's client connections declare: MCP Apps (``io.modelcontextprotocol/ui``) once a
host that renders views has said so, never before (a server then degrades to text, as it must for a client
without views)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.apps import APP_MIME_TYPE, APPS_EXTENSION

if TYPE_CHECKING:
    from mcp.client.extension import ClientExtension

_apps = False


def declare_mcp_apps() -> None:
    """A host renders views: connections opened from now on declare the extension."""
    global _apps
    _apps = True


def client_extensions() -> list[ClientExtension]:
    """What a connection opened now declares."""
    if not _apps:
        return []
    from mcp.client.extension import advertise

    return [advertise(APPS_EXTENSION, {"mimeTypes": [APP_MIME_TYPE]})]
