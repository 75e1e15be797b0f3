"""What a server config takes from outside itself: the daemon variables it names and the credential files it
reads, each with the config field that names it (for the deployment's rules in ``policy``)."""

from __future__ import annotations

import os
from collections.abc import Iterator

from protocol.config import HttpServerConfig, McpServerConfig
from protocol.jsonrpc import AppError


def env_references(config: McpServerConfig) -> Iterator[tuple[str, str]]:
    """``(field, variable)`` for every daemon variable the config reads."""
    if not isinstance(config, HttpServerConfig):
        yield from ((f"envVars.{index}", name) for index, name in enumerate(config.env_vars))
        return
    yield from ((f"envHeaders.{header}", name) for header, name in config.env_headers.items())
    if config.bearer_token_env_var is not None:
        yield "bearerTokenEnvVar", config.bearer_token_env_var
    oauth = config.oauth
    if oauth is None:
        return
    named = [
        ("oauth.clientSecretEnvVar", oauth.client_secret_env_var),
        ("oauth.privateKeyEnvVar", oauth.private_key_env_var),
        ("oauth.assertionEnvVar", oauth.assertion_env_var),
    ]
    if oauth.idp is not None:
        named += [
            ("oauth.idp.clientSecretEnvVar", oauth.idp.client_secret_env_var),
            ("oauth.idp.idTokenEnvVar", oauth.idp.id_token_env_var),
        ]
    yield from ((field, variable) for field, variable in named if variable is not None)


def credential_files(config: McpServerConfig) -> Iterator[tuple[str, str]]:
    """``(field, path)`` for every credential file the config reads."""
    if isinstance(config, HttpServerConfig) and config.oauth is not None:
        oauth = config.oauth
        if oauth.assertion_file is not None:
            yield "oauth.assertionFile", oauth.assertion_file
        if oauth.idp is not None and oauth.idp.id_token_file is not None:
            yield "oauth.idp.idTokenFile", oauth.idp.id_token_file


def _inside(path: str, folder: str) -> str | None:
    """``path`` relative to ``folder`` when it lies inside it, else None (both absolute and normalised)."""
    return path[len(folder) + 1 :] if path.startswith(folder.rstrip("/") + "/") else None


def credential_location(path: str, field: str, folders: tuple[tuple[str, str], ...]) -> tuple[str, str]:
    """The host-named folder (resolved) holding ``path`` and the path within it; ``unsafePath`` when the host named
    no folder (``--credential-dir``, each as given and resolved), or none holds it."""
    wanted = os.path.normpath(path)
    for given, resolved in folders:
        for folder in (given, resolved):
            relative = _inside(wanted, folder)
            if relative:
                return resolved, relative
    named = "no folder for credential files (--credential-dir)" if not folders else (
        "it outside every folder it named for credential files (--credential-dir)"
    )
    raise AppError("unsafePath", f"{field} is not read: the host named {named}", path=path)
