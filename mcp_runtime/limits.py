"""The limits of SPEC §5; each one fails explicitly with a typed reason."""

# Stated in protocol/ because the generated TypeScript client reads it too.
from protocol.constants import MAX_MESSAGE_BYTES as MAX_MESSAGE_BYTES

MAX_SERVERS = 32
MAX_TOOLS_PER_SERVER = 128
MAX_DISCOVERY_PAGES = 16
MAX_CATALOG_BYTES = 512 * 1024
MAX_CONFIG_BYTES = 256 * 1024
MAX_RESULT_BYTES = 64 * 1024 * 1024
"""The largest result a server may give (a 64 MiB file read): answered, projected and archived (SPEC §4, §5)."""
MAX_SERVER_MESSAGE_BYTES = 2 * MAX_RESULT_BYTES + 16 * 1024 * 1024
"""A server's message or HTTP body: one past it fails the request it answers (``responseTooLarge``), never the
connection. Set by memory, not by the client's line cap: servers send a result twice (``content`` and
``structuredContent``, as server-filesystem does), JSON-escaped, so a 64 MiB result needs twice that and room."""
MAX_VIEW_BYTES = 16 * 1024 * 1024
"""An MCP Apps view (a ``ui://`` resource) is read whole up to this size, else ``resourceTooLarge`` (SPEC §13)."""
