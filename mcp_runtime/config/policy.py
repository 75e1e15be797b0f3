"""The deployment's config policy (SPEC §1 ``--transports``, ``--stdio-sandbox``), parsed before ``initialize``.

It lives apart from ``mcp_runtime.config`` so that the command line can parse it without importing pydantic:
the daemon answers ``initialize`` before any model is loaded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from protocol.jsonrpc import AppError

if TYPE_CHECKING:
    from protocol.config import McpServerConfig, StdioServerConfig

TRANSPORTS = ("stdio", "http")
"""The transport names (``protocol.config.TRANSPORTS``; a test keeps the two equal)."""


@dataclass(frozen=True)
class ConfigPolicy:
    """What this deployment allows, enforced by the runtime."""

    transports: frozenset[str] = frozenset(TRANSPORTS)
    stdio_sandbox: tuple[str, ...] = ()

    @classmethod
    def from_options(cls, transports: str | None, stdio_sandbox: str | None) -> ConfigPolicy:
        """Parse the command-line options; a ``ValueError`` says what is wrong with them."""
        allowed = frozenset(TRANSPORTS)
        if transports is not None:
            names = [part.strip() for part in transports.split(",") if part.strip()]
            unknown = sorted(set(names) - set(TRANSPORTS))
            if not names or unknown:
                raise ValueError(f"--transports takes a comma-separated list of {', '.join(TRANSPORTS)}")
            allowed = frozenset(names)
        prefix: tuple[str, ...] = ()
        if stdio_sandbox is not None:
            try:
                argv = json.loads(stdio_sandbox)
            except ValueError as exc:
                raise ValueError("--stdio-sandbox is not valid JSON") from exc
            if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
                raise ValueError("--stdio-sandbox must be a JSON list of one or more non-empty strings")
            prefix = tuple(argv)
        return cls(allowed, prefix)

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

    def stdio_argv(self, config: StdioServerConfig) -> list[str]:
        """The argv a stdio server is spawned with: the host's sandbox prefix, then its command and args."""
        return [*self.stdio_sandbox, config.command, *config.args]


_policy = ConfigPolicy()


def policy() -> ConfigPolicy:
    """The deployment's policy (set once at start-up by the command line)."""
    return _policy


def set_policy(value: ConfigPolicy) -> None:
    global _policy
    _policy = value
