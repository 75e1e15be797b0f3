"""Runtime OAuth for live connections: one shared credential per server name + exact URL, never a login.

Every connection to the same (data dir, name, URL) gets the same provider (``shared_auth``), whose lock merges
refreshes so that a rotating refresh token is spent exactly once; the SDK's own flow is not used because it
holds its lock across every request, answers a 401 with an interactive login and forgets the discovered
token endpoint on a restart. A failure is never raised from the flow (it would end the SDK transport's POST
writer): the refused response is rewritten into a typed JSON-RPC error for that one request.
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import AsyncGenerator, Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_field_from_www_auth,
    handle_auth_metadata_response,
    handle_protected_resource_response,
    issuers_match,
)
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER

from mcp_runtime import _sdk_compat
from mcp_runtime.oauth.credentials import CredentialStore, StoredTokenStorage
from mcp_runtime.oauth.policy import OriginPolicy, sdk_failure, silence_sdk_auth_logging
from mcp_runtime.session.upstream_guard import REASON_MARKER
from protocol.config import OAuthSettings
from protocol.jsonrpc import REASON_CODES, AppError

_NO_REDIRECT = "http://127.0.0.1/unused"
"""Registration metadata needs a redirect URI; the runtime provider never authorizes, so it is never used."""

_FileStamp = tuple[int, int, int] | None


def client_secret(settings: OAuthSettings | None, env: Mapping[str, str]) -> str | None:
    """The pre-registered client's secret from the environment; ``missingEnvVar`` when the variable is unset."""
    if settings is None or settings.client_secret_env_var is None:
        return None
    value = env.get(settings.client_secret_env_var)
    if not value:
        raise AppError(
            "missingEnvVar",
            f"environment variable {settings.client_secret_env_var} (oauth.clientSecretEnvVar) is not set",
            variable=settings.client_secret_env_var,
        )
    return value


def pre_registered_client(settings: OAuthSettings, secret: str | None, stored: dict[str, Any] | None) -> Any:
    """The configured client id (and secret) over what the store remembers (auth method, issuer)."""
    method = "none" if secret is None else "client_secret_basic"
    info: dict[str, Any] = {"token_endpoint_auth_method": method, **(stored or {}), "client_id": settings.client_id}
    info.pop("client_secret", None)  # only ever the configured one
    if secret is not None:
        info["client_secret"] = secret
    return OAuthClientInformationFull.model_validate({**info, "redirect_uris": None})


def _check_resource(server_url: str, prm: ProtectedResourceMetadata) -> None:
    """RFC 8707: the protected resource metadata must describe this server (or a parent of its URL)."""
    if prm.resource is None:
        return
    expected = resource_url_from_server_url(server_url)
    if not check_resource_allowed(requested_resource=expected, configured_resource=str(prm.resource)):
        raise OAuthFlowError(f"Protected resource {prm.resource} does not match expected {expected}")


class _SharedFlow:
    """The orchestration shared by user and machine providers (mixed in before an SDK provider class)."""

    context: Any

    def _setup(
        self,
        name: str,
        url: str,
        store: CredentialStore,
        settings: OAuthSettings | None,
        timeout_s: float,
        secret: str | None,
    ) -> None:
        self._policy = OriginPolicy(url, settings.allowed_origins if settings is not None else None)
        self._store, self._name, self._url = store, name, url
        self._settings, self._secret = settings, secret
        self._timeout = httpx2.Timeout(timeout_s)
        self._stamp: _FileStamp = None
        self._had_tokens = False
        self._loaded = False

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

    async def _obtain(self) -> None:
        """Get a new access token (called under the lock when the current one is missing or refused)."""
        if not self.context.can_refresh_token():
            return
        assert isinstance(self, OAuthClientProvider)  # mixed in before an SDK provider class
        refresh_request = await _sdk_compat.refresh_request(self)
        async with self._oauth_client() as client:
            response = await self._send(client, refresh_request, "token endpoint")
        if 300 <= response.status_code < 400 or not await _sdk_compat.accept_refresh(self, response):
            self.context.clear_tokens()
        self._stamp = self._file_stamp()  # our own write: no need to read it back

    async def _ensure_token(self, seen: str | None) -> AppError | None:
        """A new token, unless another task already replaced the one ``seen`` was sent with; the failure if any.

        Under the lock, so the refreshes of all connections merge. A failed refresh clears the tokens until the
        credential file changes (a login); a refused origin or an unreachable endpoint keeps them for the next try.
        """
        async with self.context.lock:
            if not self._loaded or self._stamp != self._file_stamp():
                await self._load()
            current = self._access_token()
            if current is not None and current != seen:
                return None
            try:
                await self._obtain()
            except Exception as exc:  # an origin refusal, an issuer mismatch, an unreachable endpoint
                return sdk_failure(exc)
            return None

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """Token, request, one merged refresh on 401; the OAuth requests go through ``_oauth_client``."""
        self.context.protocol_version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
        failure: AppError | None = None
        if not self._loaded or self._stamp != self._file_stamp() or self._access_token() is None:
            failure = await self._ensure_token(None)
        sent = self._access_token()
        if sent is not None:
            request.headers["Authorization"] = f"Bearer {sent}"
        response = yield request
        if response.status_code == 401 and failure is None:
            failure = await self._ensure_token(sent)
            retry_with = self._access_token()
            if failure is None and retry_with is not None and retry_with != sent:
                request.headers["Authorization"] = f"Bearer {retry_with}"
                response = yield request
        if response.status_code == 401:
            await _refuse(response, failure or self._missing())
        elif response.status_code == 403 and extract_field_from_www_auth(response, "error") == "insufficient_scope":
            required = (extract_field_from_www_auth(response, "scope") or "").split()
            await self._record_challenge(required)
            await _refuse(
                response,
                AppError(
                    "insufficientScope",
                    "the OAuth token lacks a scope this request needs; log in again (mcpServer/oauth/login)",
                    requiredScopes=required,
                ),
            )

    async def _record_challenge(self, scopes: list[str]) -> None:
        """Remember the challenge's scopes: the next login without ``scopes`` asks for them (step-up)."""
        try:
            await anyio.to_thread.run_sync(self._store.record_challenge, self._name, self._url, scopes)
        except AppError:
            return  # an unreadable or busy store: the call still fails typed, only the hint is lost
        self._stamp = self._file_stamp()


class UserOAuth(_SharedFlow, OAuthClientProvider):
    """Tokens from an interactive login (dynamic or pre-registered client), kept fresh by refresh."""

    def __init__(
        self,
        name: str,
        url: str,
        store: CredentialStore,
        settings: OAuthSettings | None,
        timeout_s: float,
        secret: str | None,
    ) -> None:
        silence_sdk_auth_logging()
        OAuthClientProvider.__init__(
            self,
            url,
            OAuthClientMetadata(redirect_uris=[_NO_REDIRECT]),
            StoredTokenStorage(store, name, url),
        )
        self._setup(name, url, store, settings, timeout_s, secret)


class MachineOAuth(_SharedFlow, ClientCredentialsOAuthProvider):
    """A machine client (``grant: clientCredentials``): a token is fetched on start and again on expiry."""

    def __init__(
        self, name: str, url: str, store: CredentialStore, settings: OAuthSettings, timeout_s: float, secret: str
    ) -> None:
        silence_sdk_auth_logging()
        assert settings.client_id is not None and settings.expected_issuer is not None
        ClientCredentialsOAuthProvider.__init__(
            self,
            url,
            StoredTokenStorage(store, name, url),
            client_id=settings.client_id,
            client_secret=secret,
            scope=" ".join(settings.scopes) if settings.scopes else None,
            issuer=settings.expected_issuer,
        )
        self._setup(name, url, store, settings, timeout_s, secret)
        self._had_tokens = True  # a failure is never "log in": there is no login for a machine client
        self._issuer_url = settings.expected_issuer
        self._machine_client = OAuthClientInformationFull(
            redirect_uris=None,
            client_id=settings.client_id,
            client_secret=secret,
            grant_types=["client_credentials"],
            token_endpoint_auth_method="client_secret_basic",
            scope=" ".join(settings.scopes) if settings.scopes else None,
        )

    def _client_override(self, stored: dict[str, Any] | None) -> Any:
        return self._machine_client

    def _missing(self) -> AppError:
        return AppError("oauthFailed", "the client-credentials grant did not yield an access token", step="token")

    async def _obtain(self) -> None:
        """Discovery (when the metadata of the expected issuer is not known yet), then the SDK's grant request."""
        async with self._oauth_client() as client:
            metadata = self.context.oauth_metadata
            if metadata is None or not issuers_match(str(metadata.issuer), self._issuer_url):
                await self._discover(client)
            token_request = await _sdk_compat.client_credentials_request(self)
            response = await self._send(client, token_request, "token endpoint")
        if 300 <= response.status_code < 400:
            raise AppError("redirectRejected", "the token endpoint answered with a redirect; redirects are refused")
        await _sdk_compat.accept_token(self, response)
        self._stamp = self._file_stamp()

    async def _discover(self, client: httpx2.AsyncClient) -> None:
        """Protected-resource, then authorization-server metadata, with the SDK's parsers; only metadata of the
        configured issuer is taken (the SDK's grant request insists on it too)."""
        for url in build_protected_resource_metadata_discovery_urls(None, self.context.server_url):
            response = await self._send(client, create_oauth_metadata_request(url), "protected resource metadata")
            prm = await handle_protected_resource_response(response)
            if prm:
                _check_resource(self.context.server_url, prm)
                self.context.protected_resource_metadata = prm
                advertised = [str(server) for server in prm.authorization_servers]
                self.context.auth_server_url = next(
                    (server for server in advertised if issuers_match(server, self._issuer_url)), advertised[0]
                )
                break
        discovery = build_oauth_authorization_server_metadata_discovery_urls(
            self.context.auth_server_url, self.context.server_url
        )
        for url in discovery:
            response = await self._send(client, create_oauth_metadata_request(url), "authorization server metadata")
            ok, asm = await handle_auth_metadata_response(response)
            if not ok:
                break
            if asm:
                if not issuers_match(str(asm.issuer), self._issuer_url):
                    raise OAuthFlowError(
                        f"Authorization server metadata issuer mismatch: {asm.issuer} != {self._issuer_url}"
                    )
                self.context.oauth_metadata = asm
                break


_SHARED: weakref.WeakValueDictionary[tuple[str, str, str], _SharedFlow] = weakref.WeakValueDictionary()
_FINGERPRINTS: dict[int, tuple[Any, ...]] = {}


def shared_auth(
    name: str,
    url: str,
    settings: OAuthSettings | None,
    data_dir: Path,
    *,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
) -> httpx2.Auth:
    """The ``httpx2.Auth`` of every connection to (name, url): the same object while the settings are the same.

    Raises ``missingEnvVar`` when a configured client secret is not in the environment.
    """
    environment = os.environ if env is None else env
    secret = client_secret(settings, environment)
    key = (str(data_dir), name, url)
    fingerprint = (settings.model_dump() if settings is not None else None, secret, timeout_s)
    provider = _SHARED.get(key)
    if provider is not None and _FINGERPRINTS.get(id(provider)) == fingerprint:
        return provider  # type: ignore[return-value]
    store = CredentialStore(data_dir)
    if settings is not None and settings.grant == "clientCredentials":
        assert secret is not None
        provider = MachineOAuth(name, url, store, settings, timeout_s, secret)
    else:
        provider = UserOAuth(name, url, store, settings, timeout_s, secret)
    _SHARED[key] = provider
    _FINGERPRINTS[id(provider)] = fingerprint
    weakref.finalize(provider, _FINGERPRINTS.pop, id(provider), None)
    return provider


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
    _sdk_compat.replace_read_body(response, body)
    if isinstance(original, httpx2.AsyncByteStream):
        await original.aclose()
