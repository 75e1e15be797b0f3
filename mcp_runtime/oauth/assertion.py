"""Assertion grants (SPEC §5): the credentials a host keeps for the daemon (the user's enterprise ID token, a
workload's JWT), the RFC 8693 token exchange of SEP-990 and the RFC 7523 ``jwt-bearer`` token request both grants
end with.

A kept credential is read for each use, since single sign-on and workload platforms rotate it in place; a value
the server refused is remembered by its digest only, so it is not sent again until the host writes a new one.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from typing import Any

import httpx2
from mcp.shared.auth import JWT_BEARER_GRANT_TYPE

from mcp_runtime.oauth.credential_files import check_jwt_shape, read_credential_file
from protocol.config import IdentityProviderSettings
from protocol.jsonrpc import AppError

TOKEN_EXCHANGE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
_FORM = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}


class HeldCredential:
    """A credential the host keeps in a file (read for each use) or in one of the daemon's variables.

    ``setting`` is the config's name for it without its ending (``oauth.assertion``: ``assertionFile`` or
    ``assertionEnvVar``); ``unavailable`` builds the typed error for a credential that cannot be read, from a plain
    description of why (the value itself is never part of one).
    """

    def __init__(
        self,
        path: str | None,
        variable: str | None,
        setting: str,
        unavailable: Callable[[str], AppError],
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.path, self.variable = path, variable
        self.field = f"{setting}File" if path is not None else f"{setting}EnvVar"
        self._unavailable = unavailable
        self._env = os.environ if env is None else env
        self._refused: set[str] = set()

    async def read(self) -> str:
        """The current value (the file read now, off the event loop); the typed error when there is none."""
        if self.path is not None:
            value = await read_credential_file(self.path, self.field, self._unavailable)
        else:
            assert self.variable is not None
            value = self._env.get(self.variable, "").strip()
            if not value:
                raise AppError(
                    "missingEnvVar",
                    f"environment variable {self.variable} ({self.field}) is not set",
                    variable=self.variable,
                )
        if not value:
            raise self._unavailable(f"{self.field} is empty")
        check_jwt_shape(value, self.field, self._unavailable)
        return value

    @staticmethod
    def _digest(value: str) -> str:
        return hashlib.sha256(value.encode()).hexdigest()

    def refuse(self, value: str) -> None:
        """The server refused ``value``: it is not sent again (until the host writes another)."""
        self._refused.add(self._digest(value))

    def refused(self, value: str) -> bool:
        return self._digest(value) in self._refused


def jwt_bearer_request(context: Any, token_endpoint: str, assertion: str, scope: str | None) -> httpx2.Request:
    """RFC 7523 §2.1: the assertion as the grant, for the server's resource; client authentication by the SDK's
    context (``client_secret_basic`` for a confidential client, nothing for a workload)."""
    data: dict[str, str] = {
        "grant_type": JWT_BEARER_GRANT_TYPE,
        "assertion": assertion,
        "resource": context.get_resource_url(),
    }
    if context.client_info is not None:
        data["client_id"] = context.client_info.client_id
    if scope:
        data["scope"] = scope
    data, headers = context.prepare_token_auth(data, dict(_FORM))
    return httpx2.Request("POST", token_endpoint, data=data, headers=headers)


def exchange_request(
    idp: IdentityProviderSettings, secret: str | None, id_token: str, audience: str, resource: str, scope: str | None
) -> httpx2.Request:
    """RFC 8693 at the enterprise IdP (SEP-990 leg 1): the user's ID token for an ID-JAG naming the authorization
    server (``audience``) and the MCP server (``resource``), exactly as given. The client authenticates with
    ``client_secret_post`` when it has a secret."""
    data = {
        "grant_type": TOKEN_EXCHANGE_GRANT_TYPE,
        "requested_token_type": ID_JAG_TYPE,
        "subject_token": id_token,
        "subject_token_type": ID_TOKEN_TYPE,
        "audience": audience,
        "resource": resource,
        "client_id": idp.client_id,
    }
    if scope:
        data["scope"] = scope
    if secret is not None:
        data["client_secret"] = secret
    return httpx2.Request("POST", idp.token_endpoint, data=data, headers=_FORM)


def idp_refused(message: str) -> AppError:
    """Only the user (through the host's single sign-on) can fix it: a login-needed failure, step ``idp``."""
    return AppError("reauthenticationRequired", message, step="idp")


def read_exchange(response: httpx2.Response) -> str:
    """The ID-JAG out of the IdP's answer; a refusal is ``reauthenticationRequired`` (step ``idp``), anything else
    the IdP got wrong ``oauthFailed`` (never quoting the answer, which may carry tokens)."""
    if 300 <= response.status_code < 400:
        raise AppError("redirectRejected", "the identity provider answered with a redirect; redirects are refused")
    if 400 <= response.status_code < 500:
        raise idp_refused(
            f"the identity provider refused to exchange the user's ID token (HTTP {response.status_code}); "
            "the user must sign in again through the host"
        )
    if response.status_code != 200:
        raise AppError(
            "oauthFailed", f"the identity provider failed the token exchange (HTTP {response.status_code})", step="idp"
        )
    try:
        body = response.json()
    except ValueError:
        body = None
    issued = body.get("access_token") if isinstance(body, dict) else None
    kind = body.get("issued_token_type", ID_JAG_TYPE) if isinstance(body, dict) else None
    if not isinstance(issued, str) or not issued or kind != ID_JAG_TYPE:
        raise AppError("oauthFailed", "the identity provider's answer carries no ID-JAG", step="idp")
    return issued
