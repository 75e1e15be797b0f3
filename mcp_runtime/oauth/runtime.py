"""Runtime OAuth for live connections: which auth object a connection to a server gets (SPEC §6).

Every connection to the same (data dir, name, URL) gets the same ``ServerAuth`` while its settings are the same,
so they share one credential: a user's login kept fresh by refresh, or a machine grant. The grant strategy is
chosen here, once per auth object.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx2

from mcp_runtime.oauth.auth import ServerAuth
from mcp_runtime.oauth.credentials import CredentialStore, StoredTokenStorage
from mcp_runtime.oauth.dpop import DPoP
from mcp_runtime.oauth.flow import LoginLost, client_secret
from mcp_runtime.oauth.grants import (
    ClientCredentialsGrant,
    Grant,
    IdentityAssertionGrant,
    RefreshGrant,
    WorkloadGrant,
)
from mcp_runtime.oauth.policy import silence_sdk_auth_logging
from protocol.config import OAuthSettings

_SHARED: weakref.WeakValueDictionary[tuple[str, str, str], ServerAuth] = weakref.WeakValueDictionary()
_FINGERPRINTS: dict[int, tuple[Any, ...]] = {}


def _grant(
    url: str, storage: StoredTokenStorage, settings: OAuthSettings | None, secret: str | None, env: Mapping[str, str]
) -> Grant:
    """The strategy of the configured grant (a user's login when none is configured)."""
    grant = settings.grant if settings is not None else None
    if settings is not None and grant == "clientCredentials":
        assert secret is not None  # client_secret raised missingEnvVar otherwise
        return ClientCredentialsGrant(url, storage, settings, secret)
    if settings is not None and grant == "identityAssertion":
        assert secret is not None
        return IdentityAssertionGrant(url, storage, settings, secret, env)
    if settings is not None and grant == "jwtBearer":
        return WorkloadGrant(url, storage, settings, env)
    return RefreshGrant(url, storage, settings, secret)


def shared_auth(
    name: str,
    url: str,
    settings: OAuthSettings | None,
    data_dir: Path,
    env: Mapping[str, str],
    *,
    timeout_s: float,
) -> httpx2.Auth:
    """The ``httpx2.Auth`` of every connection to (name, url): the same object while the settings are the same.

    Raises ``missingEnvVar`` when a configured client secret or private key is not in the environment.
    """
    secret = client_secret(settings, env)
    key = (str(data_dir), name, url)
    fingerprint = (settings.model_dump() if settings is not None else None, secret, timeout_s)
    auth: ServerAuth | None = _SHARED.get(key)
    if auth is not None and _FINGERPRINTS.get(id(auth)) == fingerprint:
        return auth
    silence_sdk_auth_logging()
    store = CredentialStore(data_dir)
    dpop = DPoP(settings.dpop if settings is not None else None)
    grant = _grant(url, StoredTokenStorage(store, name, url, dpop.record), settings, secret, env)
    auth = ServerAuth(name, url, store, settings, timeout_s, dpop, grant)
    _SHARED[key] = auth
    _FINGERPRINTS[id(auth)] = fingerprint
    weakref.finalize(auth, _FINGERPRINTS.pop, id(auth), None)
    return auth


def watch(auth: httpx2.Auth, lost: LoginLost) -> None:
    """``lost`` is told when the login behind ``auth`` stops working (held weakly; other auths never tell)."""
    if isinstance(auth, ServerAuth):
        auth.watch(lost)
