"""Stdio servers started the moment a host says ``initialized``, before the MCP SDK is loaded.

Starting a child needs no SDK (``StdioTransport.start`` is ours), so autostart's children are spawned at once and
their sessions attach to them later, when the SDK and the owners have loaded: the servers' own start (an
interpreter, Node) runs while the daemon imports. A session claims a child started for an equal config; a child
no session claimed by the end of autostart is stopped, so none outlives what the store says.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import structlog

from mcp_runtime.config.policy import ConfigPolicy
from mcp_runtime.platform.shell_path import LOGIN_PATH
from mcp_runtime.session import launch
from mcp_runtime.session.stdio import StdioTransport
from mcp_runtime.session.transport import StderrTail, secret_values
from protocol.config import McpServerConfig, StdioServerConfig
from protocol.jsonrpc import AppError

log = structlog.get_logger("mcp_runtime.early")

_waiting: list[tuple[StdioServerConfig, Mapping[str, str], StdioTransport]] = []
"""Children started and not yet claimed, with the config and environment each was started for."""


@asynccontextmanager
async def children_started(
    configs: Mapping[str, McpServerConfig], env: Mapping[str, str], policy: ConfigPolicy
) -> AsyncIterator[None]:
    """Start the child of every stdio server in ``configs`` before entering (a spawn takes a few milliseconds of
    the loop, the SDK's import far longer); on leaving, stop those no session claimed. A server that would wait
    for this launch's read of the login shell, or that fails to start, is left to its session, which waits for
    that read or reports the failure."""
    try:
        for name, config in configs.items():
            if isinstance(config, StdioServerConfig) and _plannable_now(config, env, policy):
                await _start(name, config, env, policy)
        yield
    finally:
        await discard_unclaimed()


async def _start(name: str, config: StdioServerConfig, env: Mapping[str, str], policy: ConfigPolicy) -> None:
    transport = StdioTransport(config, env, StderrTail(secret_values(config, env)), policy)
    try:
        await transport.start()
    except AppError as exc:
        log.debug("early_start_failed", server=name, reason=exc.reason)
        return
    _waiting.append((config, env, transport))


def _plannable_now(config: StdioServerConfig, env: Mapping[str, str], policy: ConfigPolicy) -> bool:
    """Whether the launch of ``config`` is known without waiting for the login shell (``stdio._plan``)."""
    try:
        policy.check_transport(config)
    except AppError:
        return False
    if not policy.path_from_shell:
        return True
    sandbox = policy.stdio_sandbox
    known = LOGIN_PATH.known(os.environ)
    if known is None and sandbox:
        return False
    try:
        launch.plan(config, env, sandbox, known or ())
    except AppError:
        return False
    return True


def claim(config: StdioServerConfig, env: Mapping[str, str], tail: StderrTail) -> StdioTransport | None:
    """The transport of a child started early for an equal config and environment, if one waits; it takes the
    session's stderr tail (nothing has read its stderr yet)."""
    for index, (started, started_env, transport) in enumerate(_waiting):
        if started == config and started_env == env:
            del _waiting[index]
            transport.tail = tail
            return transport
    return None


async def discard_unclaimed() -> None:
    """Stop every child no session claimed (its server's config changed, or it was deleted, meanwhile)."""
    while _waiting:
        _, _, transport = _waiting.pop()
        log.debug("early_child_unclaimed", pid=transport.pid)
        await transport.discard()
