"""The tool-name rule's plain facts, ``mcp__<server>__<tool>`` (SPEC §5, seed 004).

One home for both sides of a language boundary: the daemon's catalog and config rules apply them, and
``ts_export`` writes them into the TypeScript client, whose tests run the daemon's own functions against its copy.
"""

TOOL_PREFIX = "mcp__"
TOOL_SEPARATOR = "__"
SERVER_NAME_PATTERN = r"[A-Za-z0-9_-]{1,24}"
"""A server name, matched whole; it never contains ``TOOL_SEPARATOR`` either."""
TOOL_NAME_PATTERN = r"[A-Za-z0-9_-]+"
"""A tool's own name, matched whole."""
MAX_TOOL_FULL_NAME = 64
"""The longest full name, ``mcp__<server>__<tool>``, in characters."""
