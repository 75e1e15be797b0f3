"""Opening a session: the SDK client for a config, and the handshake that makes it ready.

``protocol`` picks the era: ``auto`` probes ``server/discover`` (bounded, see ``_sdk_compat``) and falls back to
``initialize``; a pinned ``2026-07-28`` asks for the real discover result, because the SDK adopts a synthesized
one with empty capabilities.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from mcp_runtime import _sdk_compat
from mcp_runtime.session import early
from mcp_runtime.session.errors import marked_reason
from mcp_runtime.session.extensions import client_extensions
from mcp_runtime.session.fresh import FreshReader, config_key
from mcp_runtime.session.refresh import KINDS, fetch_catalog
from mcp_runtime.session.state import ConnectionState, dump
from mcp_runtime.session.stdio import StdioTransport
from mcp_runtime.session.transport import StderrTail, build_transport
from protocol.config import McpServerConfig, StdioServerConfig
from protocol.constants import NAME, VERSION

if TYPE_CHECKING:
    import httpx2
    from mcp import Client
    from mcp.client.session import ElicitationFnT, MessageHandlerFnT

    from mcp_runtime.config.policy import ConfigPolicy

MODES = {"auto": "auto", "2025-11-25": "legacy", "2026-07-28": "2026-07-28"}


def open_client(
    config: McpServerConfig,
    env: Mapping[str, str],
    tail: StderrTail,
    policy: ConfigPolicy,
    *,
    auth: httpx2.Auth | None,
    graceful: Callable[[], bool],
    on_message: Callable[[Any], Awaitable[None]],
    elicitation: Callable[[Any, Any], Awaitable[Any]] | None,
) -> tuple[Client, Any]:
    """The (not yet entered) SDK client and its transport under the deployment's ``policy``; ``graceful`` tells a
    stdio child how to be stopped."""
    from mcp_types import Implementation

    mode = MODES[config.protocol]
    claimed = early.claim(config, env, tail) if isinstance(config, StdioServerConfig) else None
    transport = claimed or build_transport(config, env, tail, policy, auth=auth)
    if isinstance(transport, StdioTransport):
        transport.graceful = graceful
    client_class = _sdk_compat.probe_bounded_client(marked_reason) if mode == "auto" else _sdk_compat.plain_client()
    client = client_class(
        transport,
        mode=mode,
        read_timeout_seconds=config.tool_timeout_ms / 1000,
        # The SDK calls both positionally: its protocols' parameter names are not part of the contract here.
        message_handler=cast("MessageHandlerFnT", on_message),
        elicitation_callback=cast("ElicitationFnT | None", elicitation),
        client_info=Implementation(name=NAME, version=VERSION),
        cache=None,
        extensions=client_extensions(),
    )
    return client, transport


async def _decline(_ctx: Any, _params: Any) -> Any:
    """Sessions without an elicitation handler refuse every elicitation (SPEC §3): the server gets ``decline``."""
    from mcp_types import ElicitResult

    return ElicitResult(action="decline")


async def handshake(
    client: Client, server: str, config: McpServerConfig, elicits: bool, fresh: FreshReader
) -> ConnectionState:
    """After the SDK's handshake: real capabilities for a pinned 2026 mode, then the whole catalog (the lists
    still fresh taken from ``fresh``, which learns the connection's era here)."""
    import mcp_types as types

    session = client.session
    if config.protocol == "2026-07-28":
        raw = await session.send_discover("2026-07-28")
        session.adopt(types.DiscoverResult.model_validate(raw))
    if not elicits:
        # Capabilities were sent without elicitation; from now on any elicitation is declined.
        _sdk_compat.set_elicitation_callback(session, _decline)
    capabilities = session.server_capabilities
    info = client.server_info
    state = ConnectionState(
        status="starting",
        server_info=dump(info) if info is not None else None,
        capabilities=dump(capabilities) if capabilities is not None else None,
        protocol_version=client.protocol_version,
        instructions=session.instructions,
    )
    fresh.key = config_key(config, client.protocol_version)
    fresh.modern = is_modern(client.protocol_version)
    catalog = await fetch_catalog(session, server, KINDS, fresh)
    return replace(state, status="connected", **catalog)


def is_modern(protocol_version: str | None) -> bool:
    return protocol_version in _modern_versions()


@functools.cache
def _modern_versions() -> frozenset[str]:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return frozenset(MODERN_PROTOCOL_VERSIONS)
