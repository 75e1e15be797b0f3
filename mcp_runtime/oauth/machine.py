"""Machine grants (SPEC §5): no browser login; a token is fetched on start and again on expiry, from the
authorization server whose issuer is ``expectedIssuer`` only. ``clientCredentials`` authenticates by a secret or a
signed assertion (``private_key_jwt``); ``identityAssertion`` exchanges the user's enterprise ID token for an ID-JAG
and presents it (SEP-990); ``jwtBearer`` presents a workload's JWT (SEP-1933). All ride on the shared runtime flow
(one credential per server + URL), with DPoP where it applies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
from mcp_runtime.oauth.assertion import (
    HeldCredential,
    exchange_request,
    idp_refused,
    jwt_bearer_request,
    read_exchange,
)
from mcp_runtime.oauth.credentials import CredentialStore, StoredTokenStorage
from mcp_runtime.oauth.dpop import DPoP
from mcp_runtime.oauth.flow import SharedFlow, check_resource, env_value
from mcp_runtime.oauth.policy import silence_sdk_auth_logging
from protocol.config import OAuthSettings
from protocol.jsonrpc import AppError

_KEY_TYPES = {"RS256": "RSA", "ES256": "EC"}


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


class _MachineFlow(SharedFlow):
    """A machine grant: a token is fetched on start and again on expiry, from the authorization server whose
    issuer is ``expectedIssuer`` only; each grant builds its own token request (:meth:`_grant_request`)."""

    _issuer_url: str
    _machine_client: OAuthClientInformationFull | None

    def _setup_machine(self, settings: OAuthSettings, method: str, secret: str | None, grant: str) -> None:
        assert settings.expected_issuer is not None
        self._had_tokens = True  # a failure is never "log in": there is no login for a machine client
        self._issuer_url = settings.expected_issuer
        self._machine_client = None
        if settings.client_id is not None:
            self._machine_client = OAuthClientInformationFull(
                redirect_uris=None,
                client_id=settings.client_id,
                client_secret=secret,
                grant_types=[grant],
                token_endpoint_auth_method=method,
                scope=" ".join(settings.scopes) if settings.scopes else None,
            )

    def _client_override(self, stored: dict[str, Any] | None) -> Any:
        return self._machine_client

    def _missing(self) -> AppError:
        return AppError("oauthFailed", "the token request did not yield an access token", step="token")

    def _moved(self) -> AppError | None:
        """Nobody can log in for a machine: the next token request discovers anew, and only ``expectedIssuer``
        is ever accepted (a server that moved elsewhere fails closed with an issuer mismatch)."""
        return None

    async def _grant_request(self, client: httpx2.AsyncClient) -> httpx2.Request:
        """The grant's token request, built once the metadata of the expected issuer is known."""
        raise NotImplementedError

    def _refused(self, response: httpx2.Response) -> None:
        """What the grant does when the token endpoint refused its request (nothing, unless it says so)."""

    def _failed(self, failure: AppError) -> None:
        """What the grant does with a typed failure to get a token, once the flow's HTTP client is closed (the
        session making this request is torn down only after that, if told to)."""

    async def _obtain(self) -> None:
        """Discovery (when the metadata of the expected issuer is not known yet), then the grant's token request
        (with a DPoP proof where it applies), read by the SDK."""
        try:
            async with self._oauth_client() as client:
                metadata = self.context.oauth_metadata
                if metadata is None or not issuers_match(str(metadata.issuer), self._issuer_url):
                    await self._discover(client)
                token_request = await self._grant_request(client)
                response = await self._request_token(client, token_request)
        except AppError as failure:
            self._failed(failure)
            raise
        if 300 <= response.status_code < 400:
            raise AppError("redirectRejected", "the token endpoint answered with a redirect; redirects are refused")
        if 400 <= response.status_code < 500:
            self._refused(response)
        assert isinstance(self, OAuthClientProvider)  # mixed in before an SDK provider class
        await _sdk_compat.accept_token(self, response)

    async def _discover(self, client: httpx2.AsyncClient) -> None:
        """Protected-resource, then authorization-server metadata, with the SDK's parsers; only metadata of the
        configured issuer is taken (the SDK's grant request insists on it too). What each says of DPoP is noted."""
        for url in build_protected_resource_metadata_discovery_urls(None, self.context.server_url):
            response = await self._send(client, create_oauth_metadata_request(url), "protected resource metadata")
            prm = await handle_protected_resource_response(response)
            if prm:
                check_resource(self.context.server_url, prm)
                self.context.protected_resource_metadata = prm
                self._dpop.note_resource_metadata(prm)
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
                self._dpop.note_server_metadata(response.json())
                break

    def _token_endpoint(self) -> str:
        metadata = self.context.oauth_metadata
        if metadata is None:
            raise AppError(
                "oauthFailed", "no authorization server metadata of oauth.expectedIssuer was found", step="flow"
            )
        return str(metadata.token_endpoint)


class _ClientCredentialsFlow(_MachineFlow):
    """``grant: clientCredentials``: the SDK's request (secret or signed assertion)."""

    async def _grant_request(self, client: httpx2.AsyncClient) -> httpx2.Request:
        assert isinstance(self, ClientCredentialsOAuthProvider | PrivateKeyJWTOAuthProvider)  # mixed in first
        return await _sdk_compat.client_credentials_request(self)


class MachineOAuth(_ClientCredentialsFlow, ClientCredentialsOAuthProvider):
    """A machine client authenticating with its secret (``clientSecretEnvVar``, HTTP Basic)."""

    def __init__(
        self, name: str, url: str, store: CredentialStore, settings: OAuthSettings, timeout_s: float, secret: str
    ) -> None:
        silence_sdk_auth_logging()
        assert settings.client_id is not None
        dpop = DPoP(settings.dpop)
        ClientCredentialsOAuthProvider.__init__(
            self,
            url,
            StoredTokenStorage(store, name, url, dpop.record),
            client_id=settings.client_id,
            client_secret=secret,
            scope=" ".join(settings.scopes) if settings.scopes else None,
            issuer=settings.expected_issuer,
        )
        self._setup(name, url, store, settings, timeout_s, secret, dpop)
        self._setup_machine(settings, "client_secret_basic", secret, "client_credentials")


class KeyMachineOAuth(_ClientCredentialsFlow, PrivateKeyJWTOAuthProvider):
    """A machine client authenticating with a signed assertion (``privateKeyEnvVar``, RFC 7523 ``private_key_jwt``):
    the SDK signs a short-lived JWT (``iss`` = ``sub`` = the client id, ``aud`` = the issuer) per token request."""

    def __init__(
        self, name: str, url: str, store: CredentialStore, settings: OAuthSettings, timeout_s: float, pem: str
    ) -> None:
        silence_sdk_auth_logging()
        assert settings.client_id is not None
        assertion = SignedJWTParameters(
            issuer=settings.client_id,
            subject=settings.client_id,
            signing_key=_signing_key(settings, pem),
            signing_algorithm=settings.signing_algorithm or "RS256",
        )
        dpop = DPoP(settings.dpop)
        PrivateKeyJWTOAuthProvider.__init__(
            self,
            url,
            StoredTokenStorage(store, name, url, dpop.record),
            client_id=settings.client_id,
            assertion_provider=assertion.create_assertion_provider(),
            scope=" ".join(settings.scopes) if settings.scopes else None,
            issuer=settings.expected_issuer,
        )
        self._setup(name, url, store, settings, timeout_s, pem, dpop)
        self._setup_machine(settings, "private_key_jwt", None, "client_credentials")


class _AssertionFlow(_MachineFlow, OAuthClientProvider):
    """A grant that presents an assertion with ``jwt-bearer``: the SDK's provider holds the context (client
    authentication, resource, token handling); no registration, no browser."""

    def _init_assertion(
        self, name: str, url: str, store: CredentialStore, settings: OAuthSettings, timeout_s: float, secret: str | None
    ) -> None:
        silence_sdk_auth_logging()
        dpop = DPoP(settings.dpop)
        method = "client_secret_basic" if secret is not None else "none"
        scope = " ".join(settings.scopes) if settings.scopes else None
        OAuthClientProvider.__init__(
            self,
            url,
            OAuthClientMetadata(
                redirect_uris=None, grant_types=[JWT_BEARER_GRANT_TYPE], token_endpoint_auth_method=method, scope=scope
            ),
            StoredTokenStorage(store, name, url, dpop.record),
        )
        self._setup(name, url, store, settings, timeout_s, secret, dpop)
        self._setup_machine(settings, method, secret, JWT_BEARER_GRANT_TYPE)


class IdentityAssertionOAuth(_AssertionFlow):
    """``grant: identityAssertion`` (SEP-990): for each token, the user's ID token (read now from where the host's
    single sign-on keeps it) is exchanged at the enterprise IdP for an ID-JAG naming this authorization server and
    this resource, which is presented with ``client_secret_basic``. A refused ID token is not sent again until the
    host writes another; the refusal is ``reauthenticationRequired`` (step ``idp``) and ends every connection's
    session, so every status row says so at once."""

    def __init__(
        self,
        name: str,
        url: str,
        store: CredentialStore,
        settings: OAuthSettings,
        timeout_s: float,
        secret: str,
        env: Mapping[str, str],
    ) -> None:
        idp = settings.idp
        assert idp is not None
        self._init_assertion(name, url, store, settings, timeout_s, secret)
        self._idp = idp
        self._refusal: AppError | None = None
        self._idp_secret = (
            env_value(idp.client_secret_env_var, "idp.clientSecretEnvVar", env) if idp.client_secret_env_var else None
        )
        self._id_token = HeldCredential(
            idp.id_token_file,
            idp.id_token_env_var,
            "oauth.idp.idToken",
            lambda why: idp_refused(f"the user's ID token is not available: {why}; the user must sign in"),
            env,
        )

    async def _grant_request(self, client: httpx2.AsyncClient) -> httpx2.Request:
        token_endpoint = self._token_endpoint()
        id_token = await self._id_token.read()
        if self._id_token.refused(id_token):
            raise idp_refused(
                "the identity provider refused this ID token before; it is not sent again until the host's "
                f"single sign-on writes a new one ({self._id_token.field})"
            )
        scope = self.context.client_metadata.scope
        exchange = exchange_request(
            self._idp, self._idp_secret, id_token, self._issuer_url, self.context.get_resource_url(), scope
        )
        response = await self._send(client, exchange, "identity provider's token endpoint")
        try:
            id_jag = read_exchange(response)
        except AppError as refused:
            if refused.reason == "reauthenticationRequired":
                self._id_token.refuse(id_token)
                self._refusal = refused
            raise
        return jwt_bearer_request(self.context, token_endpoint, id_jag, scope)

    def _failed(self, failure: AppError) -> None:
        """The user's sign-in no longer holds for any connection once the IdP refused it: every session is told."""
        if failure is self._refusal:
            self._refusal = None
            self._tell_watchers(failure)


class WorkloadOAuth(_AssertionFlow):
    """``grant: jwtBearer`` (SEP-1933): the workload's JWT (read now from where the platform keeps it) is the
    grant, with no client authentication. A refused one is never sent again, nor another grant tried, until the
    platform writes a new one."""

    def __init__(
        self,
        name: str,
        url: str,
        store: CredentialStore,
        settings: OAuthSettings,
        timeout_s: float,
        env: Mapping[str, str],
    ) -> None:
        self._init_assertion(name, url, store, settings, timeout_s, None)
        self._assertion = HeldCredential(
            settings.assertion_file,
            settings.assertion_env_var,
            "oauth.assertion",
            lambda why: AppError("oauthFailed", f"the workload's JWT is not available: {why}", step="assertion"),
            env,
        )
        self._presented: str | None = None

    async def _grant_request(self, client: httpx2.AsyncClient) -> httpx2.Request:
        token_endpoint = self._token_endpoint()
        assertion = await self._assertion.read()
        if self._assertion.refused(assertion):
            raise AppError(
                "oauthFailed",
                "the authorization server refused this workload JWT before; it is not sent again until "
                f"{self._assertion.field} changes",
                step="token",
            )
        self._presented = assertion
        return jwt_bearer_request(self.context, token_endpoint, assertion, self.context.client_metadata.scope)

    def _refused(self, response: httpx2.Response) -> None:
        if self._presented is not None:
            self._assertion.refuse(self._presented)
        raise AppError(
            "oauthFailed",
            f"the authorization server refused the workload JWT (HTTP {response.status_code}); it is not sent again "
            f"until {self._assertion.field} changes",
            step="token",
        )
