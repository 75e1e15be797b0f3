"""What the command line decides for the whole runtime, as one object: the deployment's policy, how the daemon
starts its child watcher, and the data dir that keeps the login shell's ``PATH``. Start-up builds it once and hands
it to the daemon, which hands it to every owner at construction; the owners, their sessions and the handlers read
the policy from it. Light to import (no model, no SDK): start-up has it before anything heavy loads."""

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
    """What of ``settings`` is process-wide: the child watcher, where the login shell's ``PATH`` is kept, and the
    policy the OAuth layer's own checks read (a login and a token fetch are not made through an owner)."""
    set_policy(settings.policy)
    use_child_watcher(settings.watcher)
    keep_login_path(settings.data_dir)
