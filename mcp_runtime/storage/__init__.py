"""Files the daemon owns in its data dir: the server store, safe file access, timestamps."""

from mcp_runtime.storage import safe_fs

__all__ = ["safe_fs"]
