"""One live MCP session to one server: the slot that supervises it and its units (connect, catalog refresh,
the 2026 listen stream, requests, errors) over our stdio transport or the SDK's Streamable HTTP."""
