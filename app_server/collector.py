"""The garbage-collector policy: CPython's default thresholds, paused while start-up loads, then one freeze.

What start-up loads (modules, models, the MCP SDK when servers are enabled) lives as long as the process, so a
collection then would walk it all and free nothing. Once it is loaded, ``gc.freeze()`` puts it out of every later
collection's reach, with the little garbage start-up left (cheaper than a full collection's pause).
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
