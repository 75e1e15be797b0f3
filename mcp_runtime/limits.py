"""The limits of SPEC §5; each one fails explicitly with a typed reason."""

# Stated in protocol/ because the generated TypeScript client reads it too.
from protocol.constants import MAX_MESSAGE_BYTES as MAX_MESSAGE_BYTES

MAX_SERVERS = 32
MAX_TOOLS_PER_SERVER = 128
MAX_DISCOVERY_PAGES = 16
MAX_CATALOG_BYTES = 512 * 1024
MAX_CONFIG_BYTES = 256 * 1024
