"""``initialize``/``initialized`` and ``$/cancelRequest``."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from protocol.base import WireModel


class ClientInfo(WireModel):
    name: str = Field(min_length=1)
    version: str
    title: str | None = None


class ClientCapabilities(WireModel):
    """Capabilities this daemon does not know are ignored, so newer clients still connect."""

    model_config = ConfigDict(extra="ignore")

    opt_out_notification_methods: list[str] | None = None


class InitializeParams(WireModel):
    client_info: ClientInfo
    capabilities: ClientCapabilities | None = None


class ServerInfo(WireModel):
    name: str
    version: str


class InitializeResult(WireModel):
    server_info: ServerInfo
    protocol_version: str
    user_agent: str
    data_dir: str
    methods: list[str]
    notifications: list[str]


class CancelRequestParams(WireModel):
    id: str | int
