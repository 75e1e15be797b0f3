"""How a stdio server is started (SPEC §5, §10): which program runs, with which argv and environment.

The server's environment is the same with or without a sandbox: the SDK's safe default set, its ``PATH`` being the
daemon's followed by the login shell's (``--path-from-shell``), then the variables ``envVars`` names, then ``env``.
Without a sandbox the daemon looks the command up itself in that ``PATH`` (``commandNotFound`` names the folders).
With one, the host's wrapper (resolved once at start) runs with the safe default set only, and the server's own
variables cross it as ``/usr/bin/env K=V… <command>`` arguments: the command is then looked up inside the
sandbox, which may see other files than the daemon does.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mcp_runtime import _sdk_compat
from protocol.config import StdioServerConfig
from protocol.jsonrpc import AppError

ENV_PROGRAM = "/usr/bin/env"
"""Inside a sandbox: sets the server's variables, then runs its command (a fixed path on Linux and macOS)."""


@dataclass(frozen=True)
class Launch:
    """What ``exec`` gets: the program file, the argv (``argv[0]`` as the config wrote it) and the environment."""

    executable: str
    argv: list[str]
    env: dict[str, str]


def safe_environment() -> dict[str, str]:
    """The SDK's safe default set (``HOME LOGNAME PATH SHELL TERM USER``) from the daemon's environment, as the
    SDK's ``get_default_environment`` builds it (without importing the SDK: a child starts before it loads)."""
    return {
        name: value
        for name in _sdk_compat.INHERITED_ENV_VARS
        if (value := os.environ.get(name)) is not None and not value.startswith("()")
    }


def search_path(own: str, login: Iterable[str]) -> list[str]:
    """The daemon's ``PATH`` followed by the login shell's folders it lacks: absolute folders only, each once."""
    folders: list[str] = []
    for folder in [*own.split(os.pathsep), *login]:
        if os.path.isabs(folder) and folder not in folders:
            folders.append(folder)
    return folders


def server_environment(
    config: StdioServerConfig, env: Mapping[str, str], base: Mapping[str, str], folders: Sequence[str]
) -> dict[str, str]:
    """``base`` with ``PATH`` set to ``folders``, then the daemon variables ``envVars`` names, then ``env``."""
    result = dict(base)
    if folders:
        result["PATH"] = os.pathsep.join(folders)
    result.update({name: env[name] for name in config.env_vars if name in env})
    result.update(config.env)
    return result


def find_command(command: str, path: str) -> str:
    """The file ``command`` runs: a bare name is looked up in ``path`` (absolute folders, in order); a path with a
    folder in it is left to ``exec`` (relative to the server's ``cwd``)."""
    if os.sep in command or (os.altsep is not None and os.altsep in command):
        return command
    folders = [folder for folder in path.split(os.pathsep) if os.path.isabs(folder)]
    found = shutil.which(command, path=os.pathsep.join(folders)) if folders else None
    if found is None:
        raise AppError(
            "startupFailed",
            f"command not found: {command} (looked in {len(folders)} folders of PATH)",
            detail="commandNotFound",
            command=command,
            searched=folders,
        )
    return found


def plan(config: StdioServerConfig, env: Mapping[str, str], sandbox: Sequence[str], login: Iterable[str]) -> Launch:
    """The launch of ``config``: ``env`` is the daemon's environment, ``sandbox`` the resolved wrapper prefix
    (empty for none), ``login`` the folders the login shell adds to ``PATH``."""
    base = safe_environment()
    server_env = server_environment(config, env, base, search_path(base.get("PATH", os.defpath), login))
    if not sandbox:
        executable = find_command(config.command, server_env.get("PATH", ""))
        return Launch(executable, [config.command, *config.args], server_env)
    if "=" in config.command:
        raise AppError("startupFailed", f"a command with '=' cannot be run through the sandbox: {config.command}")
    assignments = [f"{name}={value}" for name, value in server_env.items() if base.get(name) != value]
    argv = [*sandbox, ENV_PROGRAM, "--", *assignments, config.command, *config.args]
    return Launch(sandbox[0], argv, base)
