"""The MCP side of the daemon: config policy, the store, connections and their two owners.

The package itself re-exports only what the daemon needs beside the owners: the clock and the sealed data-dir
file access (both small and free of heavy imports).
"""

from mcp_runtime import _safe_fs as safe_fs
from mcp_runtime._clock import utc_now

__all__ = ["safe_fs", "utc_now"]
