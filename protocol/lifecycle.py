"""``initialize``/``initialized`` and ``$/cancelRequest``."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from protocol.base import WireModel
from protocol.install import PolicySummary


class ClientInfo(WireModel):
    """Who the client is, for the daemon's logs."""

    name: str = Field(min_length=1, description="The client's name.")
    version: str = Field(description="The client's version.")
    title: str | None = Field(default=None, description="A name to show to people.")


class McpAppsCapability(WireModel):
    """The host renders MCP Apps views (no settings yet)."""

    model_config = ConfigDict(extra="ignore")


class ClientCapabilities(WireModel):
    """What the client wants of this connection. Capabilities this daemon does not know are ignored, so newer
    clients still connect."""

    model_config = ConfigDict(extra="ignore")

    opt_out_notification_methods: list[str] | None = Field(
        default=None, description="Notification methods never to send to this connection."
    )
    mcp_apps: McpAppsCapability | None = Field(
        default=None,
        description="The host renders MCP Apps views: every MCP connection the daemon opens from now on declares "
        "the `io.modelcontextprotocol/ui` extension.",
    )


class InitializeParams(WireModel):
    """`initialize`: the first request of every connection."""

    client_info: ClientInfo = Field(description="Who the client is.")
    capabilities: ClientCapabilities | None = Field(default=None, description="What the client wants.")


class ServerInfo(WireModel):
    """Who the daemon is."""

    name: str = Field(description="Always `mcp-app-server`.")
    version: str = Field(description="The daemon's version.")


class SecretStoreInfo(WireModel):
    """The store that holds every secret the daemon keeps (`--secret-store`)."""

    kind: Literal["keychain", "file"] = Field(
        description="`keychain`: the OS keychain; `file`: 0600 files in the data dir (literal header and OAuth "
        "secrets are then refused `inlineSecret`)."
    )
    backend: str = Field(
        description="What holds them, for people: `macOS Keychain`, `Windows Credential Locker`, `Secret Service`, "
        "`KWallet`, or `files in the data dir`."
    )


class InitializeResult(WireModel):
    """The answer to `initialize`; send the notification `initialized` next."""

    server_info: ServerInfo = Field(description="The daemon's name and version.")
    protocol_version: str = Field(description="The version of this protocol the daemon speaks.")
    user_agent: str = Field(description="`mcp-app-server/<version> (<client name>/<client version>)`.")
    data_dir: str = Field(description="The data directory the daemon uses (store, threads, credentials).")
    methods: list[str] = Field(description="Every method this connection may call after `initialize`.")
    notifications: list[str] = Field(description="Every notification the daemon may send.")
    policy: PolicySummary = Field(description="What the administrator's policy restricts.")
    secret_store: SecretStoreInfo = Field(description="Where this daemon keeps the secrets of its servers.")


class CancelRequestParams(WireModel):
    """`$/cancelRequest`: cancel one request of this connection still in flight (answered `cancelled`)."""

    id: str | int = Field(description="The id of the request to cancel.")
