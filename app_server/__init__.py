"""The daemon: JSON-RPC over stdio (and Unix sockets), dispatching the catalog to the MCP runtime."""

from protocol.constants import VERSION as __version__

__all__ = ["__version__"]
