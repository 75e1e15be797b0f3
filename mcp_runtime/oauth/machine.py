"""Machine clients (``grant: clientCredentials``, SPEC §5): no login; a token is fetched on start and again on
expiry, from the authorization server whose issuer is ``expectedIssuer`` only, authenticated by a secret or by a
signed assertion (``private_key_jwt``). Both ride on the shared runtime flow (one credential per server + URL)."""

from __future__ import annotations

from typing import Any

import httpx2
from mcp.client.auth import OAuthFlowError
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
from mcp.shared.auth import OAuthClientInformationFull

from mcp_runtime import _sdk_compat
from mcp_runtime.oauth.credentials import CredentialStore, StoredTokenStorage
from mcp_runtime.oauth.flow import SharedFlow, check_resource
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
            f"{settings.private_key_env_var} (oauth.privateKeyEnvVar) does not hold an unencrypted PEM "
            f"{_KEY_TYPES[algorithm]} private key for {algorithm}",
            step="token",
        )
    return pem


class _MachineFlow(SharedFlow):
    """A machine client (``grant: clientCredentials``): a token is fetched on start and again on expiry, from the
    authorization server whose issuer is ``expectedIssuer`` only."""

    _issuer_url: str
    _machine_client: OAuthClientInformationFull

    def _setup_machine(self, settings: OAuthSettings, method: str, secret: str | None) -> None:
        assert settings.client_id is not None and settings.expected_issuer is not None
        self._had_tokens = True  # a failure is never "log in": there is no login for a machine client
        self._issuer_url = settings.expected_issuer
        self._machine_client = OAuthClientInformationFull(
            redirect_uris=None,
            client_id=settings.client_id,
            client_secret=secret,
            grant_types=["client_credentials"],
            token_endpoint_auth_method=method,
            scope=" ".join(settings.scopes) if settings.scopes else None,
        )

    def _client_override(self, stored: dict[str, Any] | None) -> Any:
        return self._machine_client

    def _missing(self) -> AppError:
        return AppError("oauthFailed", "the client-credentials grant did not yield an access token", step="token")

    def _moved(self) -> AppError | None:
        """Nobody can log in for a machine: the next token request discovers anew, and only ``expectedIssuer``
        is ever accepted (a server that moved elsewhere fails closed with an issuer mismatch)."""
        return None

    async def _obtain(self) -> None:
        """Discovery (when the metadata of the expected issuer is not known yet), then the SDK's grant request."""
        async with self._oauth_client() as client:
            metadata = self.context.oauth_metadata
            if metadata is None or not issuers_match(str(metadata.issuer), self._issuer_url):
                await self._discover(client)
            assert isinstance(self, ClientCredentialsOAuthProvider | PrivateKeyJWTOAuthProvider)  # mixed in first
            token_request = await _sdk_compat.client_credentials_request(self)
            response = await self._send(client, token_request, "token endpoint")
        if 300 <= response.status_code < 400:
            raise AppError("redirectRejected", "the token endpoint answered with a redirect; redirects are refused")
        await _sdk_compat.accept_token(self, response)

    async def _discover(self, client: httpx2.AsyncClient) -> None:
        """Protected-resource, then authorization-server metadata, with the SDK's parsers; only metadata of the
        configured issuer is taken (the SDK's grant request insists on it too)."""
        for url in build_protected_resource_metadata_discovery_urls(None, self.context.server_url):
            response = await self._send(client, create_oauth_metadata_request(url), "protected resource metadata")
            prm = await handle_protected_resource_response(response)
            if prm:
                check_resource(self.context.server_url, prm)
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




class MachineOAuth(_MachineFlow, ClientCredentialsOAuthProvider):
    """A machine client authenticating with its secret (``clientSecretEnvVar``, HTTP Basic)."""

    def __init__(
        self, name: str, url: str, store: CredentialStore, settings: OAuthSettings, timeout_s: float, secret: str
    ) -> None:
        silence_sdk_auth_logging()
        assert settings.client_id is not None
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
        self._setup_machine(settings, "client_secret_basic", secret)


class KeyMachineOAuth(_MachineFlow, PrivateKeyJWTOAuthProvider):
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
        PrivateKeyJWTOAuthProvider.__init__(
            self,
            url,
            StoredTokenStorage(store, name, url),
            client_id=settings.client_id,
            assertion_provider=assertion.create_assertion_provider(),
            scope=" ".join(settings.scopes) if settings.scopes else None,
            issuer=settings.expected_issuer,
        )
        self._setup(name, url, store, settings, timeout_s, pem)
        self._setup_machine(settings, "private_key_jwt", None)

