"""Runtime OAuth for live connections: which provider a connection to a server gets (SPEC §6).

Every connection to the same (data dir, name, URL) gets the same provider while its settings are the same, so
they share one credential (``flow.SharedFlow``): a user's login kept fresh by refresh, or a machine grant.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import OAuthClientMetadata

from mcp_runtime.oauth.credentials import CredentialStore, StoredTokenStorage
from mcp_runtime.oauth.dpop import DPoP
from mcp_runtime.oauth.flow import LoginLost, SharedFlow, client_secret
from mcp_runtime.oauth.machine import IdentityAssertionOAuth, KeyMachineOAuth, MachineOAuth, WorkloadOAuth
from mcp_runtime.oauth.policy import silence_sdk_auth_logging
from protocol.config import OAuthSettings

_NO_REDIRECT = "http://127.0.0.1/unused"
"""Registration metadata needs a redirect URI; the runtime provider never authorizes, so it is never used."""


class UserOAuth(SharedFlow, OAuthClientProvider):
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
        dpop = DPoP(settings.dpop if settings is not None else None)
        OAuthClientProvider.__init__(
            self,
            url,
            OAuthClientMetadata(redirect_uris=[_NO_REDIRECT]),
            StoredTokenStorage(store, name, url, dpop.record),
        )
        self._setup(name, url, store, settings, timeout_s, secret, dpop)


_Provider = UserOAuth | MachineOAuth | KeyMachineOAuth | IdentityAssertionOAuth | WorkloadOAuth
_SHARED: weakref.WeakValueDictionary[tuple[str, str, str], _Provider] = weakref.WeakValueDictionary()
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

    Raises ``missingEnvVar`` when a configured client secret or private key is not in the environment.
    """
    environment = os.environ if env is None else env
    secret = client_secret(settings, environment)
    key = (str(data_dir), name, url)
    fingerprint = (settings.model_dump() if settings is not None else None, secret, timeout_s)
    provider: _Provider | None = _SHARED.get(key)
    if provider is not None and _FINGERPRINTS.get(id(provider)) == fingerprint:
        return provider
    store = CredentialStore(data_dir)
    grant = settings.grant if settings is not None else None
    if settings is not None and grant == "clientCredentials":
        assert secret is not None
        keyed = settings.private_key_env_var is not None or settings.private_key is not None
        machine = KeyMachineOAuth if keyed else MachineOAuth
        provider = machine(name, url, store, settings, timeout_s, secret)
    elif settings is not None and grant == "identityAssertion":
        assert secret is not None
        provider = IdentityAssertionOAuth(name, url, store, settings, timeout_s, secret, environment)
    elif settings is not None and grant == "jwtBearer":
        provider = WorkloadOAuth(name, url, store, settings, timeout_s, environment)
    else:
        provider = UserOAuth(name, url, store, settings, timeout_s, secret)
    _SHARED[key] = provider
    _FINGERPRINTS[id(provider)] = fingerprint
    weakref.finalize(provider, _FINGERPRINTS.pop, id(provider), None)
    return provider


def watch(auth: httpx2.Auth, lost: LoginLost) -> None:
    """``lost`` is told when the login behind ``auth`` stops working (held weakly; other auths never tell)."""
    if isinstance(auth, SharedFlow):
        auth.watch(lost)
