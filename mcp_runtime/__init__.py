"""The MCP side of the daemon: config policy, the store, connections and their two owners."""
