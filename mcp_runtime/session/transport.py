"""The SDK transport for a server config (SPEC §5), and what a session keeps of its server's stderr."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from mcp_runtime.config.edits import REDACTED
from mcp_runtime.session.http import HttpTransport, resolve_headers
from mcp_runtime.session.stdio import StdioTransport
from protocol.config import McpServerConfig, StdioServerConfig

if TYPE_CHECKING:
    import httpx2

    from mcp_runtime.config.policy import ConfigPolicy


STDERR_TAIL_BYTES = 8 * 1024
MIN_REDACTED_LEN = 4
"""Shorter values are not redacted: a 1-3 character value would garble the tail and is no secret."""


class StderrTail:
    """The last few KiB a child wrote to stderr, with secret values replaced by ``***`` when read.

    Redaction happens on read over a buffer kept ``max(len(secret))`` longer than the tail, so a secret
    split by a chunk boundary is still matched and a secret cut by the truncation is dropped, not shown.
    """

    def __init__(self, secrets: list[str], limit: int = STDERR_TAIL_BYTES) -> None:
        self._secrets = sorted({s for s in secrets if len(s) >= MIN_REDACTED_LEN}, key=len, reverse=True)
        self._slack = max((len(s.encode()) for s in self._secrets), default=0)
        self._limit = limit
        self._buffer = bytearray()
        self._truncated = False

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        excess = len(self._buffer) - (self._limit + self._slack)
        if excess > 0:
            del self._buffer[:excess]
            self._truncated = True

    def text(self) -> str | None:
        if not self._buffer:
            return None
        text = self._buffer.decode("utf-8", errors="replace")
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        if self._truncated:
            text = text[self._slack :]
        return text[-self._limit :]


def secret_values(config: McpServerConfig, env: Mapping[str, str]) -> list[str]:
    """Every value the config injects from its own ``env`` or the daemon environment."""
    if isinstance(config, StdioServerConfig):
        return [*config.env.values(), *(env[name] for name in config.env_vars if name in env)]
    names = [*config.env_headers.values(), *([config.bearer_token_env_var] if config.bearer_token_env_var else [])]
    return [env[name] for name in names if name in env]


def build_transport(
    config: McpServerConfig,
    env: Mapping[str, str],
    tail: StderrTail,
    policy: ConfigPolicy,
    *,
    auth: httpx2.Auth | None = None,
) -> StdioTransport | HttpTransport:
    """The SDK transport for ``config`` under the deployment's ``policy``; env-referenced values are resolved here
    (``missingEnvVar`` early)."""
    policy.check_transport(config)
    policy.check_sources(config)
    if isinstance(config, StdioServerConfig):
        return StdioTransport(config, env, tail, policy)
    return HttpTransport(config, resolve_headers(config, env), auth)
