"""The wire contract of mcp-app-server: pure pydantic models and the method catalog, no I/O."""
