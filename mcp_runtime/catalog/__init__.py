"""The tool catalog: tool names, which tools a context sees, keyword search, and the per-owner cache."""
