"""The one auth object of a server's HTTP connections (SPEC §6): one credential per server name + exact URL, never
a login. It holds the SDK's ``OAuthContext`` (made by the grant's SDK provider), the grant strategy that obtains a
token, and the credential's DPoP layer; every connection to the server shares it.

Its lock merges refreshes so that a rotating refresh token is spent exactly once; the SDK's own flow is not used
because it holds its lock across every request, answers a 401 with an interactive login and forgets the
discovered token endpoint on a restart. A failure is never raised from the flow (it would end the SDK transport's
POST writer): the refused response is rewritten into a typed JSON-RPC error for that one request. A login that
stops working for every connection (a refused refresh, a changed authorization server) leaves the store and
tells every session using it, so every status row says so at once.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_field_from_www_auth,
    extract_resource_metadata_from_www_auth,
    handle_protected_resource_response,
    issuers_match,
)
from mcp.shared.auth import OAuthMetadata, OAuthToken, ProtectedResourceMetadata
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER

from mcp_runtime.oauth.credentials import LOGIN_LOST, CredentialStore, StoredTokenStorage
from mcp_runtime.oauth.dpop import DPoP, send_token_request
from mcp_runtime.oauth.flow import LoginLost, refuse
from mcp_runtime.oauth.policy import OriginPolicy, sdk_failure
from protocol.config import OAuthSettings
from protocol.jsonrpc import AppError

if TYPE_CHECKING:
    from mcp_runtime.oauth.grants import Grant

_FileStamp = tuple[int, int, int] | None


class ServerAuth(httpx2.Auth):
    """The ``httpx2.Auth`` of every connection to one server + URL: token, request, one merged refresh on 401."""

    requires_response_body = True

    def __init__(
        self,
        name: str,
        url: str,
        store: CredentialStore,
        settings: OAuthSettings | None,
        timeout_s: float,
        dpop: DPoP,
        grant: Grant,
    ) -> None:
        self.grant = grant
        self.context: Any = grant.context
        """The SDK's ``OAuthContext``: tokens, client, metadata, the lock."""
        self.dpop = dpop
        self._policy = OriginPolicy(url, settings.allowed_origins if settings is not None else None)
        self._store, self._name, self._url = store, name, url
        self._timeout = httpx2.Timeout(timeout_s)
        self._stamp: _FileStamp = None
        self.had_tokens = grant.machine
        """Whether a failure means "log in again" rather than "log in" (never "log in" for a machine grant)."""
        self._loaded = False
        self._watchers: list[weakref.WeakMethod[LoginLost]] = []

    # ------------------------------------------------------------------ who is told when the login is lost

    def watch(self, lost: LoginLost) -> None:
        """Call ``lost`` (a bound method, held weakly) when the stored login stops working for every connection."""
        self._watchers = [w for w in self._watchers if w() is not None]
        self._watchers.append(weakref.WeakMethod(lost))

    def tell_watchers(self, error: AppError) -> None:
        for watcher in self._watchers:
            lost = watcher()
            if lost is not None:
                lost(error)

    # ------------------------------------------------------------------ the stored credential

    def _file_stamp(self) -> _FileStamp:
        try:
            st = os.stat(self._store.path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    async def _load(self) -> None:
        """(Re)load tokens, registration, the absolute expiry and the discovered metadata (one file read)."""
        self._stamp = self._file_stamp()
        storage: StoredTokenStorage = self.context.storage
        entry = await anyio.to_thread.run_sync(storage.entry) or {}
        tokens = entry.get("tokens")
        self.context.current_tokens = OAuthToken.model_validate(tokens) if isinstance(tokens, dict) else None
        self.context.client_info = self.grant.client(entry.get("clientInfo"))
        self.context.token_expiry_time = entry.get("expiresAt")
        metadata = entry.get("metadata") or {}
        prm, asm = metadata.get("protectedResource"), metadata.get("authorizationServer")
        self.context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(prm) if prm else None
        self.context.oauth_metadata = OAuthMetadata.model_validate(asm) if asm else None
        self.context.auth_server_url = metadata.get("authServerUrl")
        self.dpop.load(entry)
        self.had_tokens = self.had_tokens or self.context.current_tokens is not None
        self._loaded = True

    # ------------------------------------------------------------------ the flow's own requests

    async def send(self, client: httpx2.AsyncClient, request: httpx2.Request, what: str) -> httpx2.Response:
        """Send one request of the flow: its origin must be allowed (checked before sending); never redirected."""
        self._policy.check(str(request.url), what)
        return await client.send(request)

    def oauth_client(self) -> httpx2.AsyncClient:
        """The flow's own HTTP client, bounded by the startup timeout.

        Not the connection's client: a network error of a request sent by the auth flow would escape the
        transport's request task and end the whole connection; here it becomes a typed failure.
        """
        return httpx2.AsyncClient(timeout=self._timeout, follow_redirects=False)

    async def request_token(self, client: httpx2.AsyncClient, request: httpx2.Request) -> httpx2.Response:
        """A token request of the flow (refresh or grant), through the DPoP layer; its response as the SDK's
        handlers read it."""

        async def send(each: httpx2.Request) -> httpx2.Response:
            return await self.send(client, each, "token endpoint")

        return await send_token_request(self.dpop, request, send)

    # ------------------------------------------------------------------ tokens

    def _access_token(self) -> str | None:
        """The token to present, if any: valid, and DPoP-bound where DPoP is required."""
        tokens = self.context.current_tokens
        if tokens is None or not self.context.is_token_valid() or not self.dpop.usable():
            return None
        return str(tokens.access_token)

    async def _ensure_token(self, seen: str | None, refused: httpx2.Response | None = None) -> AppError | None:
        """A new token, unless another task already replaced the one ``seen`` was sent with; the failure if any.

        Under the lock, so the refreshes of all connections merge. ``refused``: the 401 ``seen`` got, which first
        sends us to the protected resource metadata: credentials of an authorization server it no longer names
        are dropped before anything is sent with them. A refused refresh clears the tokens until the credential
        file changes (a login); a refused origin or an unreachable endpoint keeps them for the next try.
        """
        async with self.context.lock:
            if not self._loaded or self._stamp != self._file_stamp():
                await self._load()
            current = self._access_token()
            if current is not None and current != seen:
                return None
            try:
                if refused is not None and seen is not None and await self._authorization_server_moved(refused):
                    moved = await self._forget_authorization_server()
                    if moved is not None:
                        return moved
                await self.grant.obtain(self)
            except Exception as exc:  # an origin refusal, an issuer mismatch, an unreachable endpoint
                return sdk_failure(exc)
            return None

    async def _authorization_server_moved(self, refused: httpx2.Response) -> bool:
        """Whether the protected resource metadata no longer names the authorization server our credentials are
        from (SPEC §5); False when that is unknown (nothing stored, no metadata found)."""
        stored = self.context.auth_server_url
        if stored is None:
            return False
        hint = extract_resource_metadata_from_www_auth(refused)
        async with self.oauth_client() as client:
            for url in build_protected_resource_metadata_discovery_urls(hint, self.context.server_url):
                response = await self.send(client, create_oauth_metadata_request(url), "protected resource metadata")
                if 300 <= response.status_code < 400:
                    raise AppError("redirectRejected", "the protected resource metadata answered with a redirect")
                prm = await handle_protected_resource_response(response)
                if prm:
                    return not any(issuers_match(str(server), stored) for server in prm.authorization_servers)
        return False

    async def _forget_authorization_server(self) -> AppError | None:
        """Drop the stored registration, tokens and metadata of the old authorization server, in memory and in the
        store; the failure to report (None: go on and obtain a token)."""

        def forget(entry: dict[str, Any]) -> dict[str, Any] | None:
            if not entry:
                return None
            return {k: v for k, v in entry.items() if k not in ("tokens", "expiresAt", "clientInfo", "metadata")}

        await anyio.to_thread.run_sync(self._store.update, self._name, self._url, forget)
        await self._load()
        return self.grant.moved(self)

    async def lose_login(self, lost: str) -> None:
        """The stored login no longer works: its tokens leave the store (unless a login replaced them meanwhile),
        so every status row says a login is needed, and every connection's session ends with that reason."""

        def drop(entry: dict[str, Any]) -> dict[str, Any] | None:
            tokens = entry.get("tokens")
            if not entry or not isinstance(tokens, dict) or tokens.get("access_token") != lost:
                return entry or None
            kept = {k: v for k, v in entry.items() if k not in ("tokens", "expiresAt")}
            return {**kept, LOGIN_LOST: True}  # every connection made from now on says a login is needed again

        try:
            await anyio.to_thread.run_sync(self._store.update, self._name, self._url, drop)
        except AppError:
            pass  # an unreadable or busy store: the sessions still end, only the rows' authStatus lags
        self.tell_watchers(self.grant.missing(self.had_tokens))

    # ------------------------------------------------------------------ the connection's requests

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """Token, request, one merged refresh on 401; the OAuth requests go through ``oauth_client``.

        A DPoP-bound token goes with a fresh proof, and a ``use_dpop_nonce`` answer is sent once more with the
        server's nonce (the DPoP layer decides) before anything else is concluded: it is never a reason to
        refresh.
        """
        self.context.protocol_version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
        failure: AppError | None = None
        if not self._loaded or self._stamp != self._file_stamp() or self._access_token() is None:
            failure = await self._ensure_token(None)
        sent = self._access_token()
        if sent is not None:
            self.dpop.authorize(request, sent)
        response = yield request
        if sent is not None and self.dpop.resend(response, request, sent):
            response = yield request
        if response.status_code == 401 and failure is None:
            failure = self.dpop.refused_nonce(response)
        if response.status_code == 401 and failure is None:
            self.dpop.note_challenge(response)
            failure = await self._ensure_token(sent, response)
            retry_with = self._access_token()
            if failure is None and retry_with is not None and retry_with != sent:
                self.dpop.authorize(request, retry_with)
                sent = retry_with
                response = yield request
                if self.dpop.resend(response, request, sent):
                    response = yield request
                failure = self.dpop.refused_nonce(response)
        if response.status_code == 401:
            await refuse(response, failure or self.grant.missing(self.had_tokens))
        elif response.status_code == 403 and extract_field_from_www_auth(response, "error") == "insufficient_scope":
            required = (extract_field_from_www_auth(response, "scope") or "").split()
            await self._record_challenge(required)
            await refuse(
                response,
                AppError(
                    "insufficientScope",
                    "the OAuth token lacks a scope this request needs; log in again (mcpServer/oauth/login)",
                    requiredScopes=required,
                ),
            )

    async def _record_challenge(self, scopes: list[str]) -> None:
        """Remember the challenge's scopes: the next login without ``scopes`` asks for them (step-up).

        The file changed: the next request reads it back (it may hold a login's tokens written meanwhile, which
        taking our own stamp would hide)."""
        try:
            await anyio.to_thread.run_sync(self._store.record_challenge, self._name, self._url, scopes)
        except AppError:
            return  # an unreadable or busy store: the call still fails typed, only the hint is lost
