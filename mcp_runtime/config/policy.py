"""The deployment's config policy (SPEC §1 ``--transports``, ``--stdio-sandbox``, ``--path-from-shell``;
SPEC §5 ``--oauth-client-metadata-url``), set once by the command line.

It imports no model, so the command line sets it before any is loaded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from protocol.constants import TRANSPORTS
from protocol.jsonrpc import AppError

if TYPE_CHECKING:
    from protocol.config import McpServerConfig


@dataclass(frozen=True)
class ConfigPolicy:
    """What this deployment allows, enforced by the runtime."""

    transports: frozenset[str] = frozenset(TRANSPORTS)
    stdio_sandbox: tuple[str, ...] = ()
    """The wrapper prefix of every stdio server, its first word an absolute path (the command line resolves it)."""
    path_from_shell: bool = False
    """Whether stdio commands are also looked up in the user's login-shell ``PATH`` (the command line's default)."""
    oauth_client_metadata_url: str | None = None
    """The client ID metadata document a login uses when its server's config names none."""
    credential_dirs: tuple[tuple[str, str], ...] = ()
    """The folders credential files may be read from (``--credential-dir``), each as given and resolved."""
    allowed_env: tuple[str, ...] | None = None
    """The daemon variables a config may name (``--allow-env``: names, or prefixes ending in ``*``); None: any."""

    def env_allowed(self, variable: str) -> bool:
        if self.allowed_env is None:
            return True
        return any(variable.startswith(rule[:-1]) if rule.endswith("*") else variable == rule
                   for rule in self.allowed_env)

    def check_env(self, variable: str, field: str) -> None:
        """``unsafeEnv`` for a daemon variable outside ``--allow-env``."""
        if not self.env_allowed(variable):
            raise AppError(
                "unsafeEnv", f"{field} names {variable}, which this deployment does not let configs read",
                variable=variable,
            )

    def check_sources(self, config: McpServerConfig, name: str | None = None) -> None:
        """Every daemon variable the config names (``envVars``, ``envHeaders``, ``bearerTokenEnvVar``, each
        ``*EnvVar``) under ``--allow-env`` (``unsafeEnv``), every credential file under ``--credential-dir``
        (``unsafePath``)."""
        from mcp_runtime.config.sources import credential_files, credential_location, env_references

        for field, variable in env_references(config):
            self.check_env(variable, field)
        for field, path in credential_files(config):
            credential_location(path, field, self.credential_dirs)
    registry_url: str | None = None
    """``--registry-url``: the MCP Registry that registry search, get and install read (SPEC §15)."""

    def check_transport(self, config: McpServerConfig, name: str | None = None) -> None:
        if config.type not in self.transports:
            about = f"server {name!r}" if name is not None else "this server"
            details = {"transport": config.type} | ({"name": name} if name is not None else {})
            raise AppError(
                "transportNotAllowed", f"{about} uses {config.type}, which this deployment does not allow", **details
            )

    def check_all(self, servers: Iterable[tuple[str, McpServerConfig]]) -> None:
        for name, config in servers:
            self.check_transport(config, name)


_policy = ConfigPolicy()


def policy() -> ConfigPolicy:
    """The deployment's policy as the OAuth layer reads it, the same object start-up hands the owners in
    ``RuntimeSettings`` (set once, by ``configure_runtime``)."""
    return _policy


def set_policy(value: ConfigPolicy) -> None:
    global _policy
    _policy = value
