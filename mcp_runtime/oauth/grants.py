"""How the shared auth object gets a token, one small strategy per grant (SPEC §5, §6):

* ``RefreshGrant``: a user's interactive login (dynamic or pre-registered client), kept fresh by refresh;
* ``ClientCredentialsGrant``: a machine client with a secret or a signed assertion (``private_key_jwt``);
* ``IdentityAssertionGrant``: the user's enterprise ID token exchanged for an ID-JAG, presented with ``jwt-bearer``
  (SEP-990);
* ``WorkloadGrant``: a workload's JWT presented with ``jwt-bearer`` (SEP-1933).

Each holds the SDK provider whose ``OAuthContext`` the auth object uses and whose request builders and response
handlers it calls (never its auth flow). The machine grants fetch from the authorization server whose issuer is
``expectedIssuer`` only. A kept credential (the ID token, the workload's JWT) is read in one method per grant.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    handle_auth_metadata_response,
    handle_protected_resource_response,
    issuers_match,
)
from mcp.shared.auth import JWT_BEARER_GRANT_TYPE, OAuthClientInformationFull, OAuthClientMetadata

from mcp_runtime import _sdk_compat
from mcp_runtime.oauth.assertion import HeldCredential, exchange_request, idp_refused, jwt_bearer_request, read_exchange
from mcp_runtime.oauth.credentials import StoredTokenStorage
from mcp_runtime.oauth.flow import check_resource, env_value, pre_registered_client
from mcp_runtime.oauth.policy import join_scopes
from protocol.config import OAuthSettings
from protocol.jsonrpc import AppError

if TYPE_CHECKING:
    from mcp_runtime.oauth.auth import ServerAuth

_NO_REDIRECT = "http://127.0.0.1/unused"
"""Registration metadata needs a redirect URI; the runtime never authorizes, so it is never used."""
_KEY_TYPES = {"RS256": "RSA", "ES256": "EC"}


def scope_of(settings: OAuthSettings | None) -> str | None:
    """The configured scopes as the ``scope`` every request of a grant carries."""
    return join_scopes(settings.scopes) if settings is not None else None


class Grant(ABC):
    """How a token is obtained for the shared auth object, and what its failures mean."""

    machine = False
    """A machine grant: no login can help, so a failure is never "log in"."""

    def __init__(self, sdk: OAuthClientProvider) -> None:
        self.sdk = sdk
        self.context: Any = sdk.context

    @abstractmethod
    async def obtain(self, auth: ServerAuth) -> None:
        """Get a new access token into the context (called under the lock when the current one is missing or
        refused)."""

    @abstractmethod
    def client(self, stored: dict[str, Any] | None) -> Any:
        """The client registration to use, given the one the store remembers."""

    def missing(self, had_tokens: bool) -> AppError:
        """Why a request goes without a token."""
        if had_tokens:
            return AppError(
                "reauthenticationRequired",
                "the stored OAuth token expired and could not be refreshed; log in again (mcpServer/oauth/login)",
            )
        return AppError("authRequired", "the server requires an OAuth login (mcpServer/oauth/login)")

    def moved(self, auth: ServerAuth) -> AppError | None:
        """After the old authorization server's credentials were dropped: a login is needed, on every
        connection."""
        auth.had_tokens = False
        error = AppError(
            "authRequired",
            "the server names another authorization server now; its stored login was dropped: log in again "
            "(mcpServer/oauth/login)",
        )
        auth.tell_watchers(error)
        return error


class RefreshGrant(Grant):
    """Tokens from an interactive login, kept fresh by refresh; a login that can no longer yield one (its refresh
    refused, no refresh token left) is lost, one whose refresh could not be sent is kept for the next try."""

    def __init__(
        self, url: str, storage: StoredTokenStorage, settings: OAuthSettings | None, secret: str | None
    ) -> None:
        super().__init__(OAuthClientProvider(url, OAuthClientMetadata(redirect_uris=[_NO_REDIRECT]), storage))
        self._settings, self._secret = settings, secret

    def client(self, stored: dict[str, Any] | None) -> Any:
        """The stored registration, or the configured pre-registered client over it."""
        if self._settings is not None and self._settings.client_id is not None:
            return pre_registered_client(self._settings, self._secret, stored)
        return OAuthClientInformationFull.model_validate(stored) if isinstance(stored, dict) else None

    async def obtain(self, auth: ServerAuth) -> None:
        tokens = self.context.current_tokens
        if tokens is None:
            return
        if not self.context.can_refresh_token():
            await auth.lose_login(tokens.access_token)
            return
        refresh_request = await _sdk_compat.refresh_request(self.sdk)
        async with auth.oauth_client() as client:
            response = await auth.request_token(client, refresh_request)
        if 300 <= response.status_code < 400 or not await _sdk_compat.accept_refresh(self.sdk, response):
            self.context.clear_tokens()
            await auth.lose_login(tokens.access_token)


class MachineGrant(Grant):
    """A grant without a login: discovery of the expected issuer's metadata when not known yet, then the grant's
    own token request (``token_request``), read by the SDK."""

    machine = True

    def __init__(
        self, sdk: OAuthClientProvider, settings: OAuthSettings, method: str, secret: str | None, grant_type: str
    ) -> None:
        super().__init__(sdk)
        assert settings.expected_issuer is not None  # the config's rules require it for a machine grant
        self._issuer_url = settings.expected_issuer
        self._client: OAuthClientInformationFull | None = None
        if settings.client_id is not None:
            self._client = OAuthClientInformationFull(
                redirect_uris=None,
                client_id=settings.client_id,
                client_secret=secret,
                grant_types=[grant_type],
                token_endpoint_auth_method=method,
                scope=scope_of(settings),
            )

    def client(self, stored: dict[str, Any] | None) -> Any:
        return self._client

    def missing(self, had_tokens: bool) -> AppError:
        return AppError("oauthFailed", "the token request did not yield an access token", step="token")

    def moved(self, auth: ServerAuth) -> AppError | None:
        """Nobody can log in for a machine: the next token request discovers anew, and only ``expectedIssuer``
        is ever accepted (a server that moved elsewhere fails closed with an issuer mismatch)."""
        return None

    @abstractmethod
    async def token_request(self, auth: ServerAuth, client: httpx2.AsyncClient) -> httpx2.Request:
        """The grant's token request, built once the metadata of the expected issuer is known."""

    def refused(self, response: httpx2.Response) -> None:
        """What the grant does when the token endpoint refused its request (nothing, unless it says so)."""

    def failed(self, auth: ServerAuth, failure: AppError) -> None:
        """What the grant does with a typed failure to get a token, once the flow's HTTP client is closed."""

    async def obtain(self, auth: ServerAuth) -> None:
        try:
            async with auth.oauth_client() as client:
                metadata = self.context.oauth_metadata
                if metadata is None or not issuers_match(str(metadata.issuer), self._issuer_url):
                    await self._discover(auth, client)
                token_request = await self.token_request(auth, client)
                response = await auth.request_token(client, token_request)
        except AppError as failure:
            self.failed(auth, failure)
            raise
        if 300 <= response.status_code < 400:
            raise AppError("redirectRejected", "the token endpoint answered with a redirect; redirects are refused")
        if 400 <= response.status_code < 500:
            self.refused(response)
        await _sdk_compat.accept_token(self.sdk, response)

    async def _discover(self, auth: ServerAuth, client: httpx2.AsyncClient) -> None:
        """Protected-resource, then authorization-server metadata, with the SDK's parsers; only metadata of the
        configured issuer is taken (the SDK's grant request insists on it too). What each says of DPoP is noted."""
        context = self.context
        for url in build_protected_resource_metadata_discovery_urls(None, context.server_url):
            response = await auth.send(client, create_oauth_metadata_request(url), "protected resource metadata")
            prm = await handle_protected_resource_response(response)
            if prm:
                check_resource(context.server_url, prm)
                context.protected_resource_metadata = prm
                auth.dpop.note_resource_metadata(prm)
                advertised = [str(server) for server in prm.authorization_servers]
                context.auth_server_url = next(
                    (server for server in advertised if issuers_match(server, self._issuer_url)), advertised[0]
                )
                break
        discovery = build_oauth_authorization_server_metadata_discovery_urls(
            context.auth_server_url, context.server_url
        )
        for url in discovery:
            response = await auth.send(client, create_oauth_metadata_request(url), "authorization server metadata")
            ok, asm = await handle_auth_metadata_response(response)
            if not ok:
                break
            if asm:
                if not issuers_match(str(asm.issuer), self._issuer_url):
                    raise OAuthFlowError(
                        f"Authorization server metadata issuer mismatch: {asm.issuer} != {self._issuer_url}"
                    )
                context.oauth_metadata = asm
                auth.dpop.note_server_metadata(response.json())
                break

    def _token_endpoint(self) -> str:
        metadata = self.context.oauth_metadata
        if metadata is None:
            raise AppError(
                "oauthFailed", "no authorization server metadata of oauth.expectedIssuer was found", step="flow"
            )
        return str(metadata.token_endpoint)


def _signing_key(settings: OAuthSettings, pem: str) -> str:
    """The PEM key, checked to be a private key of the kind its algorithm signs with (never quoted back)."""
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    algorithm = settings.signing_algorithm or "RS256"
    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        key = None
    expected = rsa.RSAPrivateKey if algorithm == "RS256" else ec.EllipticCurvePrivateKey
    if not isinstance(key, expected):
        raise AppError(
            "oauthFailed",
            f"{settings.private_key_env_var or 'the kept value'} (oauth.privateKey) does not hold an unencrypted PEM "
            f"{_KEY_TYPES[algorithm]} private key for {algorithm}",
            step="token",
        )
    return pem


class ClientCredentialsGrant(MachineGrant):
    """``grant: clientCredentials``: the SDK's request, authenticated by the client's secret
    (``clientSecretEnvVar``, HTTP Basic) or by a signed assertion (``privateKeyEnvVar``, RFC 7523
    ``private_key_jwt``: the SDK signs a short-lived JWT, ``iss`` = ``sub`` = the client id, per token request)."""

    def __init__(self, url: str, storage: StoredTokenStorage, settings: OAuthSettings, secret: str) -> None:
        assert settings.client_id is not None  # the config's rules require it for client credentials
        sdk: ClientCredentialsOAuthProvider | PrivateKeyJWTOAuthProvider
        if settings.private_key_env_var is not None or settings.private_key is not None:
            assertion = SignedJWTParameters(
                issuer=settings.client_id,
                subject=settings.client_id,
                signing_key=_signing_key(settings, secret),
                signing_algorithm=settings.signing_algorithm or "RS256",
            )
            sdk = PrivateKeyJWTOAuthProvider(
                url,
                storage,
                client_id=settings.client_id,
                assertion_provider=assertion.create_assertion_provider(),
                scope=scope_of(settings),
                issuer=settings.expected_issuer,
            )
            super().__init__(sdk, settings, "private_key_jwt", None, "client_credentials")
        else:
            sdk = ClientCredentialsOAuthProvider(
                url,
                storage,
                client_id=settings.client_id,
                client_secret=secret,
                scope=scope_of(settings),
                issuer=settings.expected_issuer,
            )
            super().__init__(sdk, settings, "client_secret_basic", secret, "client_credentials")
        self._credentials_sdk = sdk

    async def token_request(self, auth: ServerAuth, client: httpx2.AsyncClient) -> httpx2.Request:
        return await _sdk_compat.client_credentials_request(self._credentials_sdk)


def _assertion_provider(url: str, storage: StoredTokenStorage, settings: OAuthSettings, method: str) -> Any:
    """The SDK provider an assertion grant holds: its context does client authentication, the resource and the
    token handling; no registration, no browser."""
    metadata = OAuthClientMetadata(
        redirect_uris=None,
        grant_types=[JWT_BEARER_GRANT_TYPE],
        token_endpoint_auth_method=method,
        scope=scope_of(settings),
    )
    return OAuthClientProvider(url, metadata, storage)


class IdentityAssertionGrant(MachineGrant):
    """``grant: identityAssertion`` (SEP-990): for each token, the user's ID token (read now from where the host's
    single sign-on keeps it) is exchanged at the enterprise IdP for an ID-JAG naming this authorization server and
    this resource, which is presented with ``client_secret_basic``. A refused ID token is not sent again until the
    host writes another; the refusal is ``reauthenticationRequired`` (step ``idp``) and ends every connection's
    session, so every status row says so at once. (Why not the SDK's ``IdentityAssertionOAuthProvider``:
    docs/architecture.md, pinned by tests/oauth/test_sdk_identity_assertion.py.)"""

    def __init__(
        self, url: str, storage: StoredTokenStorage, settings: OAuthSettings, secret: str, env: Mapping[str, str]
    ) -> None:
        super().__init__(
            _assertion_provider(url, storage, settings, "client_secret_basic"),
            settings,
            "client_secret_basic",
            secret,
            JWT_BEARER_GRANT_TYPE,
        )
        idp = settings.idp
        assert idp is not None  # the config's rules require it for this grant
        self._idp = idp
        self._refusal: AppError | None = None
        self._idp_secret = idp.client_secret or (  # the value the OS keychain keeps (the config revealed), else
            env_value(idp.client_secret_env_var, "idp.clientSecretEnvVar", env) if idp.client_secret_env_var else None
        )
        self._id_token = HeldCredential(
            idp.id_token_file,
            idp.id_token_env_var,
            "oauth.idp.idToken",
            lambda why: idp_refused(f"the user's ID token is not available: {why}; the user must sign in"),
            env,
        )

    async def _read_id_token(self) -> str:
        """The user's ID token as the host keeps it now (the one place it is read)."""
        return await self._id_token.read()

    async def token_request(self, auth: ServerAuth, client: httpx2.AsyncClient) -> httpx2.Request:
        token_endpoint = self._token_endpoint()
        id_token = await self._read_id_token()
        if self._id_token.refused(id_token):
            raise idp_refused(
                "the identity provider refused this ID token before; it is not sent again until the host's "
                f"single sign-on writes a new one ({self._id_token.field})"
            )
        scope = self.context.client_metadata.scope
        exchange = exchange_request(
            self._idp, self._idp_secret, id_token, self._issuer_url, self.context.get_resource_url(), scope
        )
        response = await auth.send(client, exchange, "identity provider's token endpoint")
        try:
            id_jag = read_exchange(response)
        except AppError as refused:
            if refused.reason == "reauthenticationRequired":
                self._id_token.refuse(id_token)
                self._refusal = refused
            raise
        return jwt_bearer_request(self.context, token_endpoint, id_jag, scope)

    def failed(self, auth: ServerAuth, failure: AppError) -> None:
        """The user's sign-in no longer holds for any connection once the IdP refused it: every session is told."""
        if failure is self._refusal:
            self._refusal = None
            auth.tell_watchers(failure)


class WorkloadGrant(MachineGrant):
    """``grant: jwtBearer`` (SEP-1933): the workload's JWT (read now from where the platform keeps it) is the
    grant, with no client authentication. A refused one is never sent again, nor another grant tried, until the
    platform writes a new one."""

    def __init__(self, url: str, storage: StoredTokenStorage, settings: OAuthSettings, env: Mapping[str, str]) -> None:
        super().__init__(
            _assertion_provider(url, storage, settings, "none"), settings, "none", None, JWT_BEARER_GRANT_TYPE
        )
        self._assertion = HeldCredential(
            settings.assertion_file,
            settings.assertion_env_var,
            "oauth.assertion",
            lambda why: AppError("oauthFailed", f"the workload's JWT is not available: {why}", step="assertion"),
            env,
        )
        self._presented: str | None = None

    async def _read_assertion(self) -> str:
        """The workload's JWT as the platform keeps it now (the one place it is read)."""
        return await self._assertion.read()

    async def token_request(self, auth: ServerAuth, client: httpx2.AsyncClient) -> httpx2.Request:
        token_endpoint = self._token_endpoint()
        assertion = await self._read_assertion()
        if self._assertion.refused(assertion):
            raise AppError(
                "oauthFailed",
                "the authorization server refused this workload JWT before; it is not sent again until "
                f"{self._assertion.field} changes",
                step="token",
            )
        self._presented = assertion
        return jwt_bearer_request(self.context, token_endpoint, assertion, self.context.client_metadata.scope)

    def refused(self, response: httpx2.Response) -> None:
        if self._presented is not None:
            self._assertion.refuse(self._presented)
        raise AppError(
            "oauthFailed",
            f"the authorization server refused the workload JWT (HTTP {response.status_code}); it is not sent again "
            f"until {self._assertion.field} changes",
            step="token",
        )
