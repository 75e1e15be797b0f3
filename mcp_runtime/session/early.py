"""Stdio servers started the moment a host says ``initialized``, before the MCP SDK is loaded.

Starting a child needs no SDK (``StdioTransport.start`` is ours), so autostart's children are spawned at once and
their sessions attach to them later, when the SDK and the owners have loaded: the servers' own start (an
interpreter, Node) runs while the daemon imports. A session claims a child started for an equal config; a child
no session claimed by the end of autostart is stopped, so none outlives what the store says. A child the
``kept_launch`` thread started at ``initialized`` is held instead of starting one when its launch is the one the
server's config plans now; the launches planned here are kept for the next start.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import anyio
import structlog

from mcp_runtime.config.policy import ConfigPolicy
from mcp_runtime.platform.shell_path import LOGIN_PATH
from mcp_runtime.secrets.base import is_reference
from mcp_runtime.secrets.store import secret_store_info
from mcp_runtime.session import launch
from mcp_runtime.session.kept_launch import KeptLaunches, Planned, Started, keep
from mcp_runtime.session.stdio import StdioTransport
from mcp_runtime.session.transport import StderrTail, secret_values
from protocol.config import McpServerConfig, StdioServerConfig
from protocol.jsonrpc import AppError
from protocol.secrets import is_secret_name

log = structlog.get_logger("mcp_runtime.early")

_waiting: list[tuple[StdioServerConfig, Mapping[str, str], StdioTransport]] = []
"""Children started and not yet claimed, with the config and environment each was started for."""


@asynccontextmanager
async def children_started(
    configs: Mapping[str, McpServerConfig],
    env: Mapping[str, str],
    policy: ConfigPolicy,
    store: tuple[str, str | None],
) -> AsyncIterator[None]:
    """Start the child of every stdio server in ``configs`` before entering (a spawn takes a few milliseconds of
    the loop, the SDK's import far longer), holding those started at ``initialized`` from kept launches; on
    leaving, stop those no session claimed. A server that would wait for this launch's read of the login shell,
    or that fails to start, is left to its session, which waits for that read or reports the failure. ``store``:
    the store file's name and the digest of the bytes ``configs`` were read from, the key the launches are kept
    under."""
    kept = await _take_kept()
    log.debug("kept_launches_started", children=len(kept))
    planned: list[Planned] = []
    try:
        for name, config in configs.items():
            if isinstance(config, StdioServerConfig) and (launched := _planned_now(config, env, policy)) is not None:
                await _start(name, config, env, policy, launched, kept)
                if _keepable(config):
                    planned.append(launched)
        await _discard(kept)
        current, (store_file, digest) = KeptLaunches.current, store
        if current is not None and digest is not None and (planned != current.read or not current.matched):
            try:
                await anyio.to_thread.run_sync(keep, current.data_dir, current.identity, (store_file, digest), planned)
            except (AppError, OSError) as exc:  # a planted link, a full disk: the next start takes the longer way
                log.debug("launches_not_kept", reason=getattr(exc, "reason", None) or str(exc)[:200])
        yield
    finally:
        await _discard(kept)
        await discard_unclaimed()


async def _take_kept() -> list[Started]:
    current = KeptLaunches.current
    return await anyio.to_thread.run_sync(current.take) if current is not None else []


async def discard_kept() -> None:
    """Stop the children started from kept launches when no autostart holds them (nothing is enabled now)."""
    await _discard(await _take_kept())


async def _discard(kept: list[Started]) -> None:
    while kept:
        await anyio.to_thread.run_sync(kept.pop().discard)


async def _start(
    name: str,
    config: StdioServerConfig,
    env: Mapping[str, str],
    policy: ConfigPolicy,
    planned: Planned,
    kept: list[Started],
) -> None:
    transport = StdioTransport(config, env, StderrTail(secret_values(config, env)), policy)
    held = next((started for started in kept if started.planned == planned), None)
    try:
        if held is not None:
            kept.remove(held)
            await transport.adopt(held)
        else:
            await transport.start()
    except (AppError, OSError) as exc:  # a kept child the loop could not take is gone already (``adopt``)
        log.debug("early_start_failed", server=name, reason=getattr(exc, "reason", "startupFailed"))
        return
    _waiting.append((config, env, transport))


def _keepable(config: StdioServerConfig) -> bool:
    """Whether its launch holds nothing a file may not: no variable of the daemon's passed on, no secret-named
    ``env`` value (secrets rest in the secret store alone), and no ``env`` value at all where secrets belong in
    the OS keychain."""
    if config.env_vars or any(is_secret_name(name) for name in config.env):
        return False
    return not config.env or secret_store_info()["kind"] != "keychain"


def _planned_now(config: StdioServerConfig, env: Mapping[str, str], policy: ConfigPolicy) -> Planned | None:
    """The launch of ``config`` when it is known without waiting for the login shell (``stdio._plan``) or for a
    secret from the keychain (its session reveals it)."""
    try:
        policy.check_transport(config)
    except AppError:
        return None
    if any(is_reference(value) for value in config.env.values()):
        return None
    sandbox = policy.stdio_sandbox
    known: tuple[str, ...] | None = ()
    if policy.path_from_shell:
        known = LOGIN_PATH.known(os.environ)
        if known is None and sandbox:
            return None
    try:
        planned = launch.plan(config, env, sandbox, known or ())
    except AppError:
        return None
    return Planned(planned.executable, tuple(planned.argv), tuple(planned.env.items()), config.cwd)


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
