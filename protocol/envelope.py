"""The JSON-RPC 2.0 envelopes of SPEC §1 as models, for the schema and the typed clients.

The daemon frames and parses envelopes itself (``app_server.wire.decode``), faster than a model would; these
describe the same messages so that a client can check every line it receives (the params and results inside are
typed per method by the catalog). Clients send ``jsonrpc: "2.0"``; the daemon also accepts messages without it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from protocol.base import WireModel
from protocol.errors import ErrorData
from protocol.jsonrpc import ErrorCode

_ID = "Correlates the answer with its request: a string or an integer, unique among the requests in flight."
_VERSION = 'Always "2.0".'


class JsonRpcRequest(WireModel):
    """A request: a method and its params; it is answered by a response carrying the same `id`.

    Clients send them for the catalog's methods; the daemon sends them for server requests (ids `srv-<n>`).
    """

    jsonrpc: Literal["2.0"] = Field(description=_VERSION)
    id: str | int = Field(description=_ID)
    method: str = Field(description="The method called.")
    params: dict[str, Any] | None = Field(default=None, description="Its params (an object), typed per method.")


class JsonRpcNotification(WireModel):
    """A notification: a method and its params, never answered."""

    jsonrpc: Literal["2.0"] = Field(description=_VERSION)
    method: str = Field(description="What happened (from the daemon) or what to do (from a client).")
    params: dict[str, Any] | None = Field(default=None, description="Its params (an object), typed per method.")


class JsonRpcSuccessResponse(WireModel):
    """The answer to a request that succeeded."""

    jsonrpc: Literal["2.0"] = Field(description=_VERSION)
    id: str | int = Field(description="The `id` of the request it answers.")
    result: Any = Field(description="The result, typed by the request's method.")


class JsonRpcError(WireModel):
    """The `error` member of a failed response: a typed reason plus that reason's details."""

    code: ErrorCode = Field(description="The JSON-RPC error code; it follows from `data.reason`.")
    message: str = Field(description="What went wrong in plain words, for people (never branch on it).")
    data: ErrorData = Field(description="`reason`, the typed cause to branch on, and its details.")


class JsonRpcErrorResponse(WireModel):
    """The answer to a request that failed (`id` is null when the request's id could not be read)."""

    jsonrpc: Literal["2.0"] = Field(description=_VERSION)
    id: str | int | None = Field(description="The `id` of the request it answers, or null.")
    error: JsonRpcError = Field(description="What went wrong.")
