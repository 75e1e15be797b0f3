"""How a stdio server is started (SPEC §5, §10): which program runs, with which argv and environment.

The server's environment is the same with or without a sandbox: the SDK's safe default set, its ``PATH`` being the
daemon's followed by the login shell's (``--path-from-shell``), then the variables ``envVars`` names, then ``env``.
Without a sandbox the daemon looks the command up itself in that ``PATH`` (``commandNotFound`` names the folders).
With one, the host's wrapper (resolved once at start) runs with the safe default set, and the server's own
variables cross it in carrier variables no wrapper reads (``MCP_APP_SERVER_ENV_<i>`` = ``K=V``), which a fixed
``/bin/sh`` line inside turns back into ``K`` before it runs the command: never as arguments, since any user of the
machine can read a process's argv (SPEC §14). The command is then looked up inside the sandbox, which may see other
files than the daemon does.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mcp_runtime import _sdk_compat
from protocol.config import StdioServerConfig
from protocol.jsonrpc import AppError

SHELL_PROGRAM = "/bin/sh"
"""Inside a sandbox: sets the server's variables from their carriers, then runs its command (a fixed path on Linux
and macOS)."""
CARRIER_PREFIX = "MCP_APP_SERVER_ENV_"


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
    assignments = [f"{name}={value}" for name, value in server_env.items() if base.get(name) != value]
    prefix = CARRIER_PREFIX
    while any(name.startswith(prefix) for name in server_env):
        prefix = "_" + prefix  # a config's own variable is never taken for a carrier
    carriers = {f"{prefix}{index}": assignment for index, assignment in enumerate(assignments)}
    script = _unpacking_script(list(carriers))
    argv = [*sandbox, SHELL_PROGRAM, "-c", script, SHELL_PROGRAM, config.command, *config.args]
    return Launch(sandbox[0], argv, {**base, **carriers})


def _unpacking_script(carriers: list[str]) -> str:
    """The ``sh`` line that sets each carrier's ``K=V`` as ``K`` and runs the command: it names the carriers only,
    never a value. ``PWD`` is dropped first (the shell exports it; the server's environment does not have it)."""
    lines = ["unset PWD OLDPWD"]
    for carrier in carriers:
        lines.append(f'export "${{{carrier}%%=*}}=${{{carrier}#*=}}"; unset {carrier}')
    lines.append('exec "$@"')
    return "\n".join(lines)
