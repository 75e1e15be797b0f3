"""Sender-constrained tokens (DPoP, RFC 9449, SEP-1932): the key, the proofs and the nonces, written once for the
login, the runtime flow and the machine grants.

The SDK has no DPoP and its token model accepts only ``token_type: Bearer``: a DPoP token response is read here,
remembered as bound, and handed to the SDK's parser as the Bearer response it understands. The ES256 key is made
by the daemon per server + URL and kept with the credential (``dpopKey`` of the envelope); proofs carry ``htm``,
``htu``, ``iat``, a fresh ``jti`` and, with a token, ``ath``. A ``use_dpop_nonce`` answer is retried once with the
server's nonce by the caller, and never read as an expired token.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

import httpx2

from mcp_runtime.oauth.policy import origin_of
from protocol.jsonrpc import AppError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import ec

ALGORITHM = "ES256"
PROOF_TYPE = "dpop+jwt"
NONCE_ERROR = "use_dpop_nonce"
Mode = Literal["auto", "required", "never"]

_SCHEME = re.compile(r"(?:^|,)\s*dpop(?:\s|,|$)", re.IGNORECASE)
"""A ``DPoP`` auth-scheme in a ``WWW-Authenticate`` header (a challenge's scheme is a token not followed by ``=``)."""


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def access_token_hash(token: str) -> str:
    """``ath``: the base64url SHA-256 of the access token's ASCII (RFC 9449 §4.2)."""
    return _b64url(hashlib.sha256(token.encode("ascii")).digest())


class DPoPKey:
    """One server + URL's ES256 key pair; only its public half ever leaves the daemon (in a proof's ``jwk``)."""

    def __init__(self, private_key: ec.EllipticCurvePrivateKey) -> None:
        """jwt and cryptography load with the first key: a daemon that never proves a request never imports them
        (they sat on the path of every server start)."""
        from jwt.algorithms import ECAlgorithm

        self._private = private_key
        self.jwk: dict[str, Any] = dict(ECAlgorithm.to_jwk(private_key.public_key(), as_dict=True))

    @classmethod
    def generate(cls) -> DPoPKey:
        from cryptography.hazmat.primitives.asymmetric import ec

        return cls(ec.generate_private_key(ec.SECP256R1()))

    @classmethod
    def from_pem(cls, pem: object) -> DPoPKey | None:
        """The stored key, or None when what is stored is not an unencrypted P-256 private key."""
        if not isinstance(pem, str):
            return None
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        try:
            key = serialization.load_pem_private_key(pem.encode(), password=None)
        except (ValueError, TypeError):
            return None
        if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, ec.SECP256R1):
            return None
        return cls(key)

    def pem(self) -> str:
        from cryptography.hazmat.primitives import serialization

        return self._private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()

    def thumbprint(self) -> str:
        """RFC 7638: what a bound token's ``cnf.jkt`` names."""
        members = {name: self.jwk[name] for name in ("crv", "kty", "x", "y")}
        canonical = json.dumps(members, separators=(",", ":"), sort_keys=True).encode()
        return _b64url(hashlib.sha256(canonical).digest())

    def proof(self, method: str, url: str, *, access_token: str | None = None, nonce: str | None = None) -> str:
        """A fresh proof for one HTTP request (``htu`` without query or fragment)."""
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method.upper(),
            "htu": str(httpx2.URL(url).copy_with(query=None, fragment=None)),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        if nonce is not None:
            claims["nonce"] = nonce
        import jwt

        return jwt.encode(claims, self._private, algorithm=ALGORITHM, headers={"typ": PROOF_TYPE, "jwk": self.jwk})


def challenges_dpop(response: httpx2.Response) -> bool:
    """Whether a 401 asks for DPoP (a ``DPoP`` challenge in ``WWW-Authenticate``)."""
    return response.status_code == 401 and any(
        _SCHEME.search(value) for value in response.headers.get_list("www-authenticate")
    )


def _nonce_error(response: httpx2.Response) -> bool:
    if response.status_code == 401:
        return any(
            _SCHEME.search(value) and NONCE_ERROR in value for value in response.headers.get_list("www-authenticate")
        )
    if response.status_code == 400:
        try:
            body = json.loads(response.content)
        except (ValueError, httpx2.ResponseNotRead):
            return False
        return isinstance(body, dict) and body.get("error") == NONCE_ERROR
    return False


class DPoP:
    """The DPoP state of one credential: the mode configured, the key, whether the current tokens are bound, what
    the protected resource and its authorization server said, and the last nonce of each server (by origin)."""

    def __init__(self, mode: Mode | None) -> None:
        self.mode: Mode = mode or "auto"
        self.key: DPoPKey | None = None
        self.bound = False
        self.resource_asks = False
        self.server_algorithms: list[str] | None = None
        self._nonces: dict[str, str] = {}

    # ------------------------------------------------------------------ what the credential keeps

    def load(self, entry: dict[str, Any]) -> None:
        """The key and the binding of the stored tokens (the envelope's ``dpopKey`` and ``tokenType``)."""
        self.key = DPoPKey.from_pem(entry.get("dpopKey"))
        self.bound = self.key is not None and entry.get("tokenType") == "DPoP"

    def record(self) -> dict[str, Any]:
        """What the envelope keeps next to the tokens: the key, and ``tokenType: DPoP`` while they are bound."""
        if self.key is None:
            return {}
        return {"dpopKey": self.key.pem(), **({"tokenType": "DPoP"} if self.bound else {})}

    # ------------------------------------------------------------------ what the servers said

    def note_challenge(self, response: httpx2.Response) -> None:
        """A DPoP challenge of the protected resource: it asks for DPoP."""
        if challenges_dpop(response):
            self.resource_asks = True

    def note_resource_metadata(self, metadata: Any) -> None:
        """``dpop_bound_access_tokens_required`` in the protected resource's metadata: it asks for DPoP."""
        if metadata is not None and metadata.dpop_bound_access_tokens_required:
            self.resource_asks = True

    def note_server_metadata(self, document: object) -> None:
        """The authorization server's ``dpop_signing_alg_values_supported`` (the SDK's metadata model drops it)."""
        if isinstance(document, dict):
            algorithms = document.get("dpop_signing_alg_values_supported")
            self.server_algorithms = [str(a) for a in algorithms] if isinstance(algorithms, list) else None

    def check_supported(self) -> None:
        """``required`` against an authorization server that does not offer ES256 DPoP fails before anything else."""
        if self.mode == "required" and ALGORITHM not in (self.server_algorithms or ()):
            raise AppError(
                "oauthFailed",
                f"oauth.dpop is required but the authorization server does not support DPoP with {ALGORITHM}",
                step="dpop",
            )

    def wanted(self) -> bool:
        """Whether a token request carries a proof: always when required, for bound tokens (their refresh), and
        in ``auto`` when the resource asked and the authorization server supports it."""
        if self.mode == "never" and not self.bound:
            return False
        if self.mode == "required":
            self.check_supported()
            return True
        return self.bound or (self.resource_asks and ALGORITHM in (self.server_algorithms or ()))

    def usable(self) -> bool:
        """A stored token may be presented: under ``required`` only a bound one."""
        return self.bound or self.mode != "required"

    # ------------------------------------------------------------------ proofs and nonces

    def sign(self, request: httpx2.Request, access_token: str | None = None) -> None:
        """A fresh proof on ``request`` (with the nonce its server gave last), the key made when first needed."""
        if self.key is None:
            self.key = DPoPKey.generate()
        nonce = self._nonces.get(origin_of(str(request.url)))
        request.headers["DPoP"] = self.key.proof(
            request.method, str(request.url), access_token=access_token, nonce=nonce
        )

    def authorize(self, request: httpx2.Request, access_token: str) -> None:
        """The token on an MCP request: ``DPoP <token>`` with a fresh proof while bound, else ``Bearer``."""
        if self.bound:
            request.headers["Authorization"] = f"DPoP {access_token}"
            self.sign(request, access_token)
        else:
            request.headers["Authorization"] = f"Bearer {access_token}"
            request.headers.pop("DPoP", None)

    def learn_nonce(self, response: httpx2.Response) -> bool:
        """Whether ``response`` is a ``use_dpop_nonce`` answer with a new nonce (kept for its server): the caller
        then sends the same request once more with a fresh proof. Never a reason to refresh or log in."""
        nonce = response.headers.get("dpop-nonce")
        if not nonce or not _nonce_error(response):
            return False
        origin = origin_of(str(response.request.url))
        if self._nonces.get(origin) == nonce:
            return False
        self._nonces[origin] = nonce
        return True

    def refused_nonce(self, response: httpx2.Response) -> AppError | None:
        """The typed failure of a request still answered ``use_dpop_nonce`` after its one retry."""
        if response.headers.get("dpop-nonce") and _nonce_error(response):
            return AppError("oauthFailed", "the server kept asking for a new DPoP nonce", step="dpop")
        return None

    # ------------------------------------------------------------------ token responses

    def accept(self, response: httpx2.Response, proved: bool) -> httpx2.Response:
        """A token response as the SDK can read it. A successful one decides whether the new tokens are bound:
        ``token_type: DPoP`` (only after a proof) is rewritten to Bearer for the SDK's parser and remembered here;
        under ``required`` an unbound token fails (step ``dpop``). Other answers pass unchanged."""
        if response.status_code not in (200, 201):
            return response
        try:
            body = json.loads(response.content)
        except ValueError:
            return response
        if not isinstance(body, dict):
            return response
        bound = str(body.get("token_type", "Bearer")).lower() == "dpop"
        if bound and not proved:
            raise AppError("oauthFailed", "the token endpoint issued a DPoP token to a request without a proof",
                           step="dpop")
        if self.mode == "required" and not bound:
            raise AppError(
                "oauthFailed",
                "oauth.dpop is required but the token endpoint issued a token that is not DPoP-bound",
                step="dpop",
            )
        self.bound = bound
        if not bound:
            return response
        body["token_type"] = "Bearer"
        headers = {k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "content-encoding")}
        return httpx2.Response(
            response.status_code, headers=headers, content=json.dumps(body).encode(), request=response.request
        )


async def send_token_request(
    dpop: DPoP, request: httpx2.Request, send: Callable[[httpx2.Request], Awaitable[httpx2.Response]]
) -> httpx2.Response:
    """One token request through ``send`` (a coroutine function of the request): with a proof when DPoP applies,
    once more with the server's nonce on ``use_dpop_nonce``, and its response made readable by the SDK."""
    proved = dpop.wanted()
    if proved:
        dpop.sign(request)
    response = await send(request)
    if proved and dpop.learn_nonce(response):
        dpop.sign(request)
        response = await send(request)
    return dpop.accept(response, proved)


class ProvingAuth(httpx2.Auth):
    """The SDK's login flow with DPoP around it: the flow's token request gets a proof (and its nonce retry), its
    DPoP token response is made readable, and the request being authenticated carries the bound token as
    ``DPoP`` with a fresh proof (retried once with the resource's nonce).

    ``inner`` is an ``OAuthClientProvider``: its context says where the token endpoint and the metadata are.
    """

    requires_response_body = True

    def __init__(self, inner: Any, dpop: DPoP) -> None:
        self._inner = inner
        self._dpop = dpop

    def _token_endpoint(self) -> str:
        from urllib.parse import urljoin

        context = self._inner.context
        if context.oauth_metadata is not None:
            return str(context.oauth_metadata.token_endpoint)
        return urljoin(str(context.get_authorization_base_url(context.server_url)), "/token")

    def _is_token_request(self, request: httpx2.Request) -> bool:
        here = str(request.url.copy_with(query=None, fragment=None))
        return request.method == "POST" and here == self._token_endpoint()

    def _is_server_metadata(self, request: httpx2.Request) -> bool:
        from mcp.client.auth.utils import build_oauth_authorization_server_metadata_discovery_urls

        context = self._inner.context
        urls = build_oauth_authorization_server_metadata_discovery_urls(context.auth_server_url, context.server_url)
        return request.method == "GET" and str(request.url) in urls

    def _present(self, request: httpx2.Request) -> str | None:
        """Put a bound token the SDK set as Bearer on ``request`` as DPoP; the token, or None."""
        authorization = request.headers.get("authorization", "")
        scheme, _, token = authorization.partition(" ")
        if not token or scheme.lower() not in ("bearer", "dpop") or not self._dpop.bound:
            return None
        self._dpop.authorize(request, token.strip())
        return token.strip()

    @staticmethod
    async def _read_own(response: httpx2.Response, sent: httpx2.Request, request: httpx2.Request) -> httpx2.Response:
        """The flow's own responses (metadata, token) are read here; the authenticated request's is left streaming."""
        if sent is not request:
            await response.aread()
        return response

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = self._inner.async_auth_flow(request)
        try:
            outgoing: httpx2.Request = await flow.__anext__()
            while True:
                token_request = self._is_token_request(outgoing)
                if token_request:
                    self._dpop.note_resource_metadata(self._inner.context.protected_resource_metadata)
                proved = token_request and self._dpop.wanted()
                if proved:
                    self._dpop.sign(outgoing)
                token = None if token_request else self._present(outgoing)
                response = await self._read_own((yield outgoing), outgoing, request)
                if (proved or token is not None) and self._dpop.learn_nonce(response):
                    if proved:
                        self._dpop.sign(outgoing)
                    else:
                        self._present(outgoing)
                    response = await self._read_own((yield outgoing), outgoing, request)
                if token_request:
                    response = self._dpop.accept(response, proved)
                elif outgoing is request:
                    self._dpop.note_challenge(response)
                elif response.status_code == 200 and self._is_server_metadata(outgoing):
                    try:
                        self._dpop.note_server_metadata(json.loads(response.content))
                    except ValueError:
                        pass
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()
