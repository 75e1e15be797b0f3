"""The shutdown clock (SPEC §1: exit 0 within 5 s in every case): the phases of a stop, each bounded, in the order
start-up runs them. Every part that waits during a stop reads its bound here, so the phases add up in one place."""

SETTLE_S = 1.0
"""Input ended: time for in-flight requests to answer before the rest are cancelled."""
FLUSH_S = 2.0
"""Time a connection gets to take its last responses, even when the client no longer reads (the MCP connections
close meanwhile)."""
CLOSE_S = 2.0
"""Time for MCP connections to close before left-over process groups are killed (runs beside ``FLUSH_S``)."""
