"""Unit tests of the DPoP parts (RFC 9449) the runtime and the login share: what a proof says, which answers are
nonce challenges, and which token responses the daemon takes."""

from __future__ import annotations

import json

import httpx2
import jwt
import pytest

from mcp_runtime.oauth.dpop import DPoP, DPoPKey, access_token_hash, challenges_dpop
from protocol.jsonrpc import AppError

TOKEN_URL = "https://login.example.com/oauth/token"


def answer(status: int, body: dict[str, object] | None = None, **headers: str) -> httpx2.Response:
    request = httpx2.Request("POST", TOKEN_URL)
    content = json.dumps(body).encode() if body is not None else b""
    return httpx2.Response(status, headers=headers, content=content, request=request)


def test_a_proof_names_the_request_the_key_and_the_token_and_is_never_the_same_twice() -> None:
    key = DPoPKey.generate()
    proof = key.proof("post", "https://mcp.example.com/mcp?x=1#f", access_token="at-123", nonce="n-1")
    header = jwt.get_unverified_header(proof)
    assert (header["typ"], header["alg"]) == ("dpop+jwt", "ES256")
    assert "d" not in header["jwk"] and header["jwk"]["crv"] == "P-256"
    claims = jwt.decode(proof, jwt.PyJWK(header["jwk"], "ES256").key, algorithms=["ES256"])
    assert (claims["htm"], claims["htu"], claims["nonce"]) == ("POST", "https://mcp.example.com/mcp", "n-1")
    assert claims["ath"] == access_token_hash("at-123")
    again = jwt.decode(key.proof("POST", TOKEN_URL), options={"verify_signature": False})
    assert again["jti"] != claims["jti"] and "ath" not in again and "nonce" not in again


def test_the_key_survives_the_envelope_and_anything_else_there_is_no_key() -> None:
    key = DPoPKey.generate()
    kept = DPoPKey.from_pem(key.pem())
    assert kept is not None and kept.thumbprint() == key.thumbprint()
    for stored in (None, 7, "not a key", DPoPKey.generate().pem().replace("A", "B", 3)):
        assert DPoPKey.from_pem(stored) is None


@pytest.mark.parametrize(
    ("header", "asks"),
    [
        ('DPoP algs="ES256"', True),
        ('Bearer realm="x", DPoP algs="ES256"', True),
        ("dpop", True),
        ('Bearer error="invalid_token", scope="dpop"', False),
        ('Bearer realm="DPoP"', False),
    ],
)
def test_a_dpop_challenge_is_a_scheme_not_a_word(header: str, asks: bool) -> None:
    assert challenges_dpop(answer(401, **{"WWW-Authenticate": header})) is asks


def test_only_a_use_dpop_nonce_answer_with_a_new_nonce_is_retried() -> None:
    dpop = DPoP("auto")
    assert dpop.learn_nonce(answer(400, {"error": "use_dpop_nonce"}, **{"DPoP-Nonce": "n-1"}))
    assert not dpop.learn_nonce(answer(400, {"error": "use_dpop_nonce"}, **{"DPoP-Nonce": "n-1"}))  # same again
    assert not dpop.learn_nonce(answer(400, {"error": "invalid_grant"}, **{"DPoP-Nonce": "n-2"}))
    assert not dpop.learn_nonce(answer(401, **{"WWW-Authenticate": 'DPoP error="invalid_token"', "DPoP-Nonce": "n"}))
    challenge = {"WWW-Authenticate": 'DPoP error="use_dpop_nonce"', "DPoP-Nonce": "n-3"}
    assert dpop.learn_nonce(answer(401, **challenge))
    request = httpx2.Request("POST", TOKEN_URL)
    dpop.sign(request)
    assert jwt.decode(request.headers["DPoP"], options={"verify_signature": False})["nonce"] == "n-3"


def test_token_responses_decide_the_binding() -> None:
    dpop = DPoP("auto")
    readable = dpop.accept(answer(200, {"access_token": "at", "token_type": "DPoP"}), proved=True)
    assert dpop.bound and readable.json()["token_type"] == "Bearer"  # as the SDK's model reads it
    dpop.accept(answer(200, {"access_token": "at2", "token_type": "Bearer"}), proved=True)
    assert not dpop.bound
    with pytest.raises(AppError) as err:
        dpop.accept(answer(200, {"access_token": "at3", "token_type": "DPoP"}), proved=False)
    assert err.value.details == {"step": "dpop"}
    required = DPoP("required")
    with pytest.raises(AppError) as err:
        required.accept(answer(200, {"access_token": "at", "token_type": "Bearer"}), proved=True)
    assert (err.value.reason, err.value.details) == ("oauthFailed", {"step": "dpop"})
    refused = answer(400, {"error": "invalid_grant"})
    assert required.accept(refused, proved=True) is refused


def test_when_a_token_request_carries_a_proof() -> None:
    auto = DPoP("auto")
    assert not auto.wanted()
    auto.resource_asks = True
    assert not auto.wanted()  # the authorization server has not said it supports DPoP
    auto.note_server_metadata({"dpop_signing_alg_values_supported": ["RS256", "ES256"]})
    assert auto.wanted()
    never = DPoP("never")
    never.resource_asks, never.server_algorithms = True, ["ES256"]
    assert not never.wanted()
    required = DPoP("required")
    with pytest.raises(AppError):
        required.wanted()  # no server support known: refused before anything is sent
    required.note_server_metadata({"dpop_signing_alg_values_supported": ["ES256"]})
    assert required.wanted() and not required.usable()
    assert DPoP("auto").record() == {}
