"""The contract's plain facts (the daemon's name and versions, the transports), stated once.

Standard library only: the start-up path answers ``initialize`` from these before pydantic loads, and the MCP
runtime names itself to servers with the same ones.
"""

from typing import Literal

NAME = "mcp-app-server"
VERSION = "0.1.0"
PROTOCOL_VERSION = "2026-11-30"
"""The version of this JSON-RPC protocol, sent in the ``initialize`` answer."""
TransportName = Literal["stdio", "http"]
TRANSPORTS: tuple[TransportName, ...] = ("stdio", "http")
"""The MCP transports a server config may name (``--transports`` picks among them)."""
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
"""The longest JSON-RPC line, in bytes: a longer one is refused (``messageTooLarge``) without being held whole."""
MAX_OUTPUT_LINE_BYTES = 32 * 1024 * 1024
"""The longest line the daemon writes: an answer that would be longer is ``responseTooLarge`` instead. The largest
lists (32 servers' full catalogs, 512 KiB each) fit, so a client may cap its reader here and lose nothing."""
