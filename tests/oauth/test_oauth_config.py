"""The OAuth config of SPEC §5 for sender-constrained tokens, enterprise-managed authorization and workload
identity: each rule gives its typed reason, and what a grant needs is named."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_runtime.config.rules import parse_server_config
from protocol.jsonrpc import AppError

ISSUER = "https://login.example.com"
IDP = {"tokenEndpoint": "https://idp.example.com/token", "clientId": "desktop", "idTokenFile": "/run/sso/id_token"}
ENTERPRISE = {"grant": "identityAssertion", "clientId": "app", "clientSecretEnvVar": "APP_SECRET",
              "expectedIssuer": ISSUER, "idp": IDP}
WORKLOAD = {"grant": "jwtBearer", "expectedIssuer": ISSUER, "assertionFile": "/var/run/secrets/token"}


def http(oauth: dict[str, Any]) -> dict[str, Any]:
    return {"type": "http", "url": "https://docs.example.com/mcp", "oauth": oauth}


def refusal(oauth: dict[str, Any]) -> AppError:
    with pytest.raises(AppError) as err:
        parse_server_config("a", http(oauth))
    return err.value


def without(settings: dict[str, Any], *fields: str) -> dict[str, Any]:
    return {k: v for k, v in settings.items() if k not in fields}


@pytest.mark.parametrize(
    "oauth",
    [
        {"dpop": "auto"},
        {"dpop": "required", "clientId": "app"},
        {"dpop": "never"},
        ENTERPRISE,
        {**ENTERPRISE, "dpop": "required", "scopes": ["mcp"]},
        {**ENTERPRISE, "idp": {**without(IDP, "idTokenFile"), "idTokenEnvVar": "SSO_ID_TOKEN",
                               "clientSecretEnvVar": "IDP_SECRET"}},
        WORKLOAD,
        {**WORKLOAD, "clientId": "workload", "scopes": ["mcp"]},
        {**without(WORKLOAD, "assertionFile"), "assertionEnvVar": "WORKLOAD_JWT"},
    ],
)
def test_the_new_settings_are_accepted(oauth: dict[str, Any]) -> None:
    config = parse_server_config("a", http(oauth))
    assert config.oauth is not None  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("oauth", "path"),
    [
        ({"dpop": "sometimes"}, "config.oauth.dpop"),
        ({"dpop": True}, "config.oauth.dpop"),
        ({**ENTERPRISE, "idp": without(IDP, "tokenEndpoint")}, "config.oauth.idp.tokenEndpoint"),
        ({**ENTERPRISE, "idp": {**IDP, "idToken": "eyJ..."}}, "config.oauth.idp.idToken"),
        ({**WORKLOAD, "assertion": "eyJ..."}, "config.oauth.assertion"),
    ],
)
def test_shapes_are_checked_by_the_model(oauth: dict[str, Any], path: str) -> None:
    error = refusal(oauth)
    assert error.reason == "invalidParams"
    assert path in [e["path"] for e in error.details["errors"]]


@pytest.mark.parametrize(
    ("oauth", "field"),
    [
        (without(ENTERPRISE, "clientId", "clientSecretEnvVar"), "clientId"),
        (without(ENTERPRISE, "clientSecretEnvVar"), "clientSecretEnvVar"),
        (without(ENTERPRISE, "expectedIssuer"), "expectedIssuer"),
        (without(ENTERPRISE, "idp"), "idp"),
        ({**ENTERPRISE, "idp": without(IDP, "idTokenFile")}, "idp.idTokenFile"),
        ({**ENTERPRISE, "idp": {**IDP, "idTokenEnvVar": "SSO"}}, "idp.idTokenFile"),
        ({**ENTERPRISE, "idp": {**IDP, "idTokenFile": "relative/id_token"}}, "idp.idTokenFile"),
        ({**ENTERPRISE, "callbackPort": 8765}, "callbackPort"),
        ({**ENTERPRISE, "assertionFile": "/x"}, "assertionFile"),
        (without(WORKLOAD, "expectedIssuer"), "expectedIssuer"),
        (without(WORKLOAD, "assertionFile"), "assertionFile"),
        ({**WORKLOAD, "assertionEnvVar": "JWT"}, "assertionFile"),
        ({**WORKLOAD, "assertionFile": "token"}, "assertionFile"),
        ({**WORKLOAD, "clientId": "w", "clientSecretEnvVar": "W_SECRET"}, "clientSecretEnvVar"),
        ({**WORKLOAD, "idp": IDP}, "idp"),
        ({"idp": IDP}, "idp"),
        ({"assertionEnvVar": "JWT"}, "assertionEnvVar"),
        ({"expectedIssuer": ISSUER}, "expectedIssuer"),
        ({**without(WORKLOAD, "assertionFile"), "assertionEnvVar": "not a name"}, "assertionEnvVar"),
    ],
)
def test_what_a_grant_needs_or_refuses_is_named(oauth: dict[str, Any], field: str) -> None:
    error = refusal(oauth)
    assert error.reason == "invalidParams"
    assert f"config.oauth.{field}" in [e["path"] for e in error.details["errors"]]


def test_secrets_never_come_inline() -> None:
    assert refusal({**ENTERPRISE, "idp": {**IDP, "clientSecret": "s3cr3t"}}).reason == "inlineSecret"
    assert refusal({**ENTERPRISE, "clientSecret": "s3cr3t"}).reason == "inlineSecret"


@pytest.mark.parametrize("endpoint", ["http://idp.example.com/token", "https://user@idp.example.com/token",
                                      "https://idp.example.com/token#f"])
def test_the_idp_endpoint_follows_the_url_policy(endpoint: str) -> None:
    error = refusal({**ENTERPRISE, "idp": {**IDP, "tokenEndpoint": endpoint}})
    assert (error.reason, error.details["field"]) == ("insecureUrl", "oauth.idp.tokenEndpoint")
