"""Installing servers (SPEC §15): the MCP Registry's read API ``v0.1`` (with its cache), MCP Bundles (inspect, unpack
with guards), and an entry or a bundle turned into an ordinary server config."""
