"""The shutdown clock (SPEC §1: exit 0 within 5 s in every case): the phases of a stop, each bounded, in the order
start-up runs them. Every part that waits during a stop reads its bound here, so the phases add up in one place."""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import sys
import threading
from collections.abc import Callable

SETTLE_S = 1.0
"""Input ended: time for in-flight requests to answer before the rest are cancelled."""
FLUSH_S = 2.0
"""Time a connection gets to take its last responses, even when the client no longer reads (the MCP connections
close meanwhile)."""
CLOSE_S = 2.0
"""Time for MCP connections to close before left-over process groups are killed (runs beside ``FLUSH_S``)."""
LAST_RESORT_S = 4.5
"""From the stop: the process ends here even when a phase above hangs (a worker thread that cannot be cancelled,
say), so the host's 5 s hold in every case."""


def arm_last_resort(kill_children: Callable[[], object]) -> None:
    """End the process ``LAST_RESORT_S`` from now unless it has ended by then: every thread's stack goes to stderr
    (the log says what hung), ``kill_children`` runs, and the exit code is 0 (what was acknowledged is already on
    disk; a stop is what the host asked for)."""

    def fire() -> None:
        with contextlib.suppress(Exception):
            sys.stderr.write(json.dumps({"event": "stop_overran", "level": "error", "seconds": LAST_RESORT_S}) + "\n")
            sys.stderr.flush()
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        with contextlib.suppress(Exception):
            kill_children()
        os._exit(0)

    timer = threading.Timer(LAST_RESORT_S, fire)
    timer.daemon = True
    timer.start()
