"""The daemon: JSON-RPC over stdio (and Unix sockets), dispatching the catalog to the MCP runtime."""

__version__ = "0.1.0"
