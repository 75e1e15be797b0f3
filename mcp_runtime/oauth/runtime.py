"""Runtime OAuth for a live MCP connection: stored tokens, SDK refresh, never an interactive login.

Subclasses the SDK's ``OAuthClientProvider`` and replaces only its orchestration (``_auth_flow``): the refresh
request and the handling of its response (client authentication, ``resource``, rotation, carrying the scope
and refresh token forward, storage) are the SDK's own ``_refresh_token`` / ``_handle_refresh_response``.

Why not the SDK's flow as is: it holds its lock while each request is in flight (all calls through a provider
would be serialized until their response headers arrive), it answers a 401 with a full interactive login
instead of a refresh, and on a restart it forgets the token's expiry and the discovered token endpoint. Here
the lock is taken only to refresh, so concurrent refreshes are merged: a request that finds the token already
replaced by another task retries with it instead of refreshing again.

A failure is never raised from the auth flow: inside the SDK's streamable HTTP transport an exception there
kills the whole POST writer. The failed response is instead rewritten into the transport's synthetic JSON-RPC
error (``data.mcpAppServerReason``), so that one request fails with ``authRequired``,
``reauthenticationRequired`` or ``insufficientScope`` and the connection code maps it like any refusal.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.utils import extract_field_from_www_auth
from mcp.shared.auth import OAuthClientMetadata, OAuthMetadata, ProtectedResourceMetadata
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER

from mcp_runtime.oauth.credentials import CredentialStore, StoredTokenStorage
from mcp_runtime.oauth.policy import OriginPolicy, silence_sdk_auth_logging
from mcp_runtime.transport import REASON_MARKER
from protocol.jsonrpc import REASON_CODES, AppError

_NO_REDIRECT = "http://127.0.0.1/unused"
"""Registration metadata needs a redirect URI; the runtime provider never authorizes, so it is never used."""


class RuntimeOAuth(OAuthClientProvider):
    """An ``httpx2.Auth`` over the stored credentials of one (name, url)."""

    def __init__(self, name: str, url: str, store: CredentialStore, allowed_origins: list[str] | None) -> None:
        silence_sdk_auth_logging()
        super().__init__(
            url,
            OAuthClientMetadata(redirect_uris=[_NO_REDIRECT]),  # type: ignore[list-item]
            StoredTokenStorage(store, name, url),
        )
        self._policy = OriginPolicy(url, allowed_origins)
        self._had_tokens = False

    async def _initialize(self) -> None:
        """Load tokens, registration, the absolute expiry and the discovered metadata (one file read)."""
        import anyio

        storage: StoredTokenStorage = self.context.storage  # type: ignore[assignment]
        entry = await anyio.to_thread.run_sync(storage.entry) or {}
        self.context.current_tokens = await storage.get_tokens()
        self.context.client_info = await storage.get_client_info()
        self.context.token_expiry_time = entry.get("expiresAt")
        metadata = entry.get("metadata") or {}
        if metadata.get("protectedResource"):
            self.context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(
                metadata["protectedResource"]
            )
        if metadata.get("authorizationServer"):
            self.context.oauth_metadata = OAuthMetadata.model_validate(metadata["authorizationServer"])
        self.context.auth_server_url = metadata.get("authServerUrl")
        self._had_tokens = self.context.current_tokens is not None
        self._initialized = True

    def _access_token(self) -> str | None:
        tokens = self.context.current_tokens
        return tokens.access_token if tokens is not None and self.context.is_token_valid() else None

    def _missing(self) -> AppError:
        if self._had_tokens:
            return AppError(
                "reauthenticationRequired",
                "the stored OAuth token expired and could not be refreshed; log in again (mcpServer/oauth/login)",
            )
        return AppError("authRequired", "the server requires an OAuth login (mcpServer/oauth/login)")

    async def _ensure_token(self, seen: str | None) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """Under the lock: refresh, unless another task already replaced the token ``seen`` was sent with.

        On a failed refresh ``current_tokens`` is cleared (by the SDK), so later requests go without a token.
        """
        async with self.context.lock:
            if not self._initialized:
                await self._initialize()
            current = self._access_token()
            if (current is not None and current != seen) or not self.context.can_refresh_token():
                return
            refresh_request = await self._refresh_token()
            self._policy.check(str(refresh_request.url), "token endpoint")
            response = yield refresh_request
            if 300 <= response.status_code < 400 or not await self._handle_refresh_response(response):
                self.context.clear_tokens()

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        self.context.protocol_version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
        failure: AppError | None = None
        if not self._initialized or self._access_token() is None:
            step = self._ensure_token(None)
            try:
                outgoing = await step.__anext__()
                while True:
                    outgoing = await step.asend((yield outgoing))
            except StopAsyncIteration:
                pass
            except AppError as exc:  # the origin policy refused the token endpoint
                failure = exc
            finally:
                await step.aclose()
        sent = self._access_token()
        if sent is not None:
            request.headers["Authorization"] = f"Bearer {sent}"
        response = yield request
        if response.status_code == 401 and failure is None:
            step = self._ensure_token(sent)
            try:
                outgoing = await step.__anext__()
                while True:
                    outgoing = await step.asend((yield outgoing))
            except StopAsyncIteration:
                pass
            except AppError as exc:
                failure = exc
            finally:
                await step.aclose()
            retry_with = self._access_token()
            if failure is None and retry_with is not None and retry_with != sent:
                request.headers["Authorization"] = f"Bearer {retry_with}"
                response = yield request
        if response.status_code == 401:
            await _refuse(response, failure or self._missing())
        elif response.status_code == 403 and extract_field_from_www_auth(response, "error") == "insufficient_scope":
            required = (extract_field_from_www_auth(response, "scope") or "").split()
            await _refuse(
                response,
                AppError(
                    "insufficientScope",
                    "the OAuth token lacks a scope this request needs; log in again with requiredScopes",
                    requiredScopes=required,
                ),
            )

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """Drive ``_auth_flow`` without following redirects of its own requests (the SDK follows same-origin)."""
        flow = self._auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                outgoing = await flow.asend((yield outgoing))
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()


async def _refuse(response: httpx2.Response, error: AppError) -> None:
    """Turn ``response`` into the transport's synthetic JSON-RPC error for ``error`` (same shape, same marker)."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": int(REASON_CODES[error.reason]),
                "message": error.message,
                "data": {REASON_MARKER: error.reason, **error.details},
            },
        }
    ).encode()
    original = response.stream
    response.status_code = 400
    response.headers = httpx2.Headers({"content-type": "application/json", "content-length": str(len(body))})
    response.stream = httpx2.ByteStream(body)
    if hasattr(response, "_content"):
        # Already read (an in-memory transport builds responses read): replace the cached body too.
        response._content = body
    if isinstance(original, httpx2.AsyncByteStream):
        await original.aclose()
