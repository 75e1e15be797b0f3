"""The garbage-collector policy: CPython's default thresholds, paused while start-up loads, then one freeze.

Start-up creates what lives as long as the process (modules, models, the MCP SDK when servers are enabled): a
collection then frees nothing and walks everything, so the collector waits until that is loaded. Then
``gc.freeze()`` moves it out of the collector's reach for good (no full collection walks it again; the little
garbage start-up left is kept with it, which costs less than a full collection's pause), and the collector runs
with CPython's default thresholds.
"""

from __future__ import annotations

import gc


def pause() -> None:
    """At the process's start (``app_server.early.launch``)."""
    gc.disable()


def resume() -> None:
    """For a command that does not serve (a subcommand): nothing is loaded to freeze."""
    gc.enable()


def freeze_loaded() -> int:
    """Once start-up has loaded (``app_server.startup``); how many objects are frozen."""
    gc.freeze()
    gc.enable()
    return gc.get_freeze_count()
