"""The runtime OAuth flow every connection to a server shares: one credential per server name + exact URL, never
a login (SPEC §6).

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
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_field_from_www_auth,
    extract_resource_metadata_from_www_auth,
    handle_protected_resource_response,
    issuers_match,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken, ProtectedResourceMetadata
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER

from mcp_runtime import _sdk_compat
from mcp_runtime.config.policy import policy
from mcp_runtime.oauth.credentials import CredentialStore, StoredTokenStorage
from mcp_runtime.oauth.dpop import DPoP, send_token_request
from mcp_runtime.oauth.policy import OriginPolicy, sdk_failure
from mcp_runtime.session.upstream_guard import refusal_body
from protocol.config import OAuthSettings
from protocol.jsonrpc import AppError

_FileStamp = tuple[int, int, int] | None
LoginLost = Callable[[AppError], None]
"""Told when the stored login of a server stops working for every connection (a refused refresh, a changed
authorization server): each connection's session ends with that typed error."""


def env_value(variable: str, field_name: str, env: Mapping[str, str]) -> str:
    """A secret the config names by variable; ``missingEnvVar`` when the variable is unset or empty."""
    policy().check_env(variable, f"oauth.{field_name}")
    value = env.get(variable)
    if not value:
        raise AppError(
            "missingEnvVar", f"environment variable {variable} (oauth.{field_name}) is not set", variable=variable
        )
    return value


def client_secret(settings: OAuthSettings | None, env: Mapping[str, str]) -> str | None:
    """The client's secret (or PEM private key): the value the OS keychain keeps (``settings`` revealed, SPEC §14),
    else from the environment (``missingEnvVar`` when the variable is unset)."""
    if settings is None:
        return None
    if settings.client_secret is not None or settings.private_key is not None:
        return settings.client_secret or settings.private_key
    for variable, field_name in (
        (settings.client_secret_env_var, "clientSecretEnvVar"),
        (settings.private_key_env_var, "privateKeyEnvVar"),
    ):
        if variable is not None:
            return env_value(variable, field_name, env)
    return None


def pre_registered_client(settings: OAuthSettings, secret: str | None, stored: dict[str, Any] | None) -> Any:
    """The configured client id (and secret) over what the store remembers (auth method, issuer)."""
    method = "none" if secret is None else "client_secret_basic"
    info: dict[str, Any] = {"token_endpoint_auth_method": method, **(stored or {}), "client_id": settings.client_id}
    info.pop("client_secret", None)  # only ever the configured one
    if secret is not None:
        info["client_secret"] = secret
    return OAuthClientInformationFull.model_validate({**info, "redirect_uris": None})


def check_resource(server_url: str, prm: ProtectedResourceMetadata) -> None:
    """RFC 8707: the protected resource metadata must describe this server (or a parent of its URL)."""
    if prm.resource is None:
        return
    expected = resource_url_from_server_url(server_url)
    if not check_resource_allowed(requested_resource=expected, configured_resource=str(prm.resource)):
        raise OAuthFlowError(f"Protected resource {prm.resource} does not match expected {expected}")


class SharedFlow:
    """The orchestration shared by user and machine providers (mixed in before an SDK provider class).

    ``dpop`` is the credential's DPoP state: the provider's token storage writes its ``record`` with the tokens.
    """

    context: Any

    def _setup(
        self,
        name: str,
        url: str,
        store: CredentialStore,
        settings: OAuthSettings | None,
        timeout_s: float,
        secret: str | None,
        dpop: DPoP,
    ) -> None:
        self._dpop = dpop
        self._policy = OriginPolicy(url, settings.allowed_origins if settings is not None else None)
        self._store, self._name, self._url = store, name, url
        self._settings, self._secret = settings, secret
        self._timeout = httpx2.Timeout(timeout_s)
        self._stamp: _FileStamp = None
        self._had_tokens = False
        self._loaded = False
        self._watchers: list[weakref.WeakMethod[LoginLost]] = []

    def watch(self, lost: LoginLost) -> None:
        """Call ``lost`` (a bound method, held weakly) when the stored login stops working for every connection."""
        self._watchers = [w for w in self._watchers if w() is not None]
        self._watchers.append(weakref.WeakMethod(lost))

    def _tell_watchers(self, error: AppError) -> None:
        for watcher in self._watchers:
            lost = watcher()
            if lost is not None:
                lost(error)

    def _file_stamp(self) -> _FileStamp:
        try:
            st = os.stat(self._store.path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _client_override(self, stored: dict[str, Any] | None) -> Any:
        """The client registration to use: the stored one, or the configured pre-registered client."""
        if self._settings is not None and self._settings.client_id is not None:
            return pre_registered_client(self._settings, self._secret, stored)
        return OAuthClientInformationFull.model_validate(stored) if isinstance(stored, dict) else None

    async def _load(self) -> None:
        """(Re)load tokens, registration, the absolute expiry and the discovered metadata (one file read)."""
        self._stamp = self._file_stamp()
        storage: StoredTokenStorage = self.context.storage
        entry = await anyio.to_thread.run_sync(storage.entry) or {}
        tokens = entry.get("tokens")
        self.context.current_tokens = OAuthToken.model_validate(tokens) if isinstance(tokens, dict) else None
        self.context.client_info = self._client_override(entry.get("clientInfo"))
        self.context.token_expiry_time = entry.get("expiresAt")
        metadata = entry.get("metadata") or {}
        prm, asm = metadata.get("protectedResource"), metadata.get("authorizationServer")
        self.context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(prm) if prm else None
        self.context.oauth_metadata = OAuthMetadata.model_validate(asm) if asm else None
        self.context.auth_server_url = metadata.get("authServerUrl")
        self._dpop.load(entry)
        self._had_tokens = self._had_tokens or self.context.current_tokens is not None
        self._loaded = True

    async def _send(self, client: httpx2.AsyncClient, request: httpx2.Request, what: str) -> httpx2.Response:
        """Send one request of the flow: its origin must be allowed (checked before sending); never redirected."""
        self._policy.check(str(request.url), what)
        return await client.send(request)

    def _oauth_client(self) -> httpx2.AsyncClient:
        """The flow's own HTTP client, bounded by the startup timeout.

        Not the connection's client: a network error of a request sent by the auth flow would escape the
        transport's request task and end the whole connection; here it becomes a typed failure.
        """
        return httpx2.AsyncClient(timeout=self._timeout, follow_redirects=False)

    async def _request_token(self, client: httpx2.AsyncClient, request: httpx2.Request) -> httpx2.Response:
        """A token request of the flow (refresh or grant), with its DPoP proof and nonce retry when DPoP applies;
        its response as the SDK's handlers read it."""

        async def send(each: httpx2.Request) -> httpx2.Response:
            return await self._send(client, each, "token endpoint")

        return await send_token_request(self._dpop, request, send)

    def _access_token(self) -> str | None:
        """The token to present, if any: valid, and DPoP-bound where DPoP is required."""
        tokens = self.context.current_tokens
        if tokens is None or not self.context.is_token_valid() or not self._dpop.usable():
            return None
        return str(tokens.access_token)

    def _missing(self) -> AppError:
        if self._had_tokens:
            return AppError(
                "reauthenticationRequired",
                "the stored OAuth token expired and could not be refreshed; log in again (mcpServer/oauth/login)",
            )
        return AppError("authRequired", "the server requires an OAuth login (mcpServer/oauth/login)")

    async def _obtain(self) -> None:
        """Get a new access token by refresh (called under the lock when the current one is missing or refused).

        A login that can no longer yield one, because its refresh was refused or because it has no refresh token
        left, is lost (:meth:`_lose_login`); a refresh that could not be sent keeps it for the next try.
        """
        tokens = self.context.current_tokens
        if tokens is None:
            return
        if not self.context.can_refresh_token():
            await self._lose_login(tokens.access_token)
            return
        assert isinstance(self, OAuthClientProvider)  # mixed in before an SDK provider class
        refresh_request = await _sdk_compat.refresh_request(self)
        async with self._oauth_client() as client:
            response = await self._request_token(client, refresh_request)
        if 300 <= response.status_code < 400 or not await _sdk_compat.accept_refresh(self, response):
            self.context.clear_tokens()
            await self._lose_login(tokens.access_token)

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
                await self._obtain()
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
        async with self._oauth_client() as client:
            for url in build_protected_resource_metadata_discovery_urls(hint, self.context.server_url):
                response = await self._send(client, create_oauth_metadata_request(url), "protected resource metadata")
                if 300 <= response.status_code < 400:
                    raise AppError("redirectRejected", "the protected resource metadata answered with a redirect")
                prm = await handle_protected_resource_response(response)
                if prm:
                    return not any(issuers_match(str(server), stored) for server in prm.authorization_servers)
        return False

    async def _forget_authorization_server(self) -> AppError | None:
        """Drop the stored registration, tokens and metadata of the old authorization server, in memory and in the
        store, and end every connection's session; the failure to report (None: go on and obtain a token)."""
        def forget(entry: dict[str, Any]) -> dict[str, Any] | None:
            if not entry:
                return None
            return {k: v for k, v in entry.items() if k not in ("tokens", "expiresAt", "clientInfo", "metadata")}

        await anyio.to_thread.run_sync(self._store.update, self._name, self._url, forget)
        await self._load()
        return self._moved()

    def _moved(self) -> AppError | None:
        """After the old authorization server's credentials were dropped: a login is needed, on every connection."""
        self._had_tokens = False
        error = AppError(
            "authRequired",
            "the server names another authorization server now; its stored login was dropped: log in again "
            "(mcpServer/oauth/login)",
        )
        self._tell_watchers(error)
        return error

    async def _lose_login(self, lost: str) -> None:
        """The stored login no longer works: its tokens leave the store (unless a login replaced them meanwhile),
        so every status row says a login is needed, and every connection's session ends with that reason."""
        def drop(entry: dict[str, Any]) -> dict[str, Any] | None:
            tokens = entry.get("tokens")
            if not entry or not isinstance(tokens, dict) or tokens.get("access_token") != lost:
                return entry or None
            return {k: v for k, v in entry.items() if k not in ("tokens", "expiresAt")}

        try:
            await anyio.to_thread.run_sync(self._store.update, self._name, self._url, drop)
        except AppError:
            pass  # an unreadable or busy store: the sessions still end, only the rows' authStatus lags
        self._tell_watchers(self._missing())

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """Token, request, one merged refresh on 401; the OAuth requests go through ``_oauth_client``.

        A DPoP-bound token goes with a fresh proof, and a ``use_dpop_nonce`` answer is sent once more with the
        server's nonce before anything else is concluded: it is never a reason to refresh.
        """
        self.context.protocol_version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
        failure: AppError | None = None
        if not self._loaded or self._stamp != self._file_stamp() or self._access_token() is None:
            failure = await self._ensure_token(None)
        sent = self._access_token()
        if sent is not None:
            self._dpop.authorize(request, sent)
        response = yield request
        if sent is not None and self._dpop.learn_nonce(response):
            self._dpop.authorize(request, sent)
            response = yield request
        if response.status_code == 401 and failure is None:
            failure = self._dpop.refused_nonce(response)
        if response.status_code == 401 and failure is None:
            self._dpop.note_challenge(response)
            failure = await self._ensure_token(sent, response)
            retry_with = self._access_token()
            if failure is None and retry_with is not None and retry_with != sent:
                self._dpop.authorize(request, retry_with)
                sent = retry_with
                response = yield request
                if self._dpop.learn_nonce(response):
                    self._dpop.authorize(request, sent)
                    response = yield request
                failure = self._dpop.refused_nonce(response)
        if response.status_code == 401:
            await refuse(response, failure or self._missing())
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


async def refuse(response: httpx2.Response, error: AppError) -> None:
    """Turn ``response`` into the transport's synthetic JSON-RPC error for ``error`` (same shape, same marker)."""
    body = refusal_body(error)
    original = response.stream
    response.status_code = 400
    response.headers = httpx2.Headers({"content-type": "application/json", "content-length": str(len(body))})
    response.stream = httpx2.ByteStream(body)
    _sdk_compat.replace_read_body(response, body)
    if isinstance(original, httpx2.AsyncByteStream):
        await original.aclose()
