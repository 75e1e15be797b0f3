"""What the command line decides for the whole runtime, handed to it once at start-up as one object: the
deployment's policy, how the daemon starts its child watcher, and the data dir that keeps the login shell's
``PATH``. Light to import (no model, no SDK): start-up hands it over before anything heavy loads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_runtime.config.policy import ConfigPolicy, set_policy
from mcp_runtime.platform.shell_path import keep_login_path
from mcp_runtime.platform.watcher import use_child_watcher

__all__ = ["RuntimeSettings", "configure_runtime"]


@dataclass(frozen=True)
class RuntimeSettings:
    policy: ConfigPolicy
    watcher: Sequence[str]
    """The command that starts this program again as its child watcher (``watch_children``)."""
    data_dir: Path
    """Where the login shell's last ``PATH`` is kept for the next launch."""


def configure_runtime(settings: RuntimeSettings) -> None:
    """The one door through which start-up configures the runtime: each part reads its share from here on."""
    set_policy(settings.policy)
    use_child_watcher(settings.watcher)
    keep_login_path(settings.data_dir)
