"""The secrets of a server config: which fields hold one, sealing them into the store before ``mcps.json`` is
written, revealing them when the server starts, and forgetting those a write left behind.

A field's value in a stored config is what the store recorded for it (the value with the file store, a
``keychain:`` reference with the keychain); ``config.edits`` keeps a recorded value only where ``***`` or a patch
leaves it in place at an unchanged destination, so a reference never follows a server elsewhere.
"""

from __future__ import annotations

from typing import Any

from mcp_runtime.secrets.base import SecretStore, is_reference
from protocol.config import HttpServerConfig, McpServerConfig, StdioServerConfig
from protocol.jsonrpc import AppError

REDACTED = "***"
"""What the wire shows for a secret; in a thread's record, what stands for the app's value at the same destination."""

OAUTH_FIELDS = (("clientSecret", "client_secret"), ("privateKey", "private_key"))


def secret_fields(config: McpServerConfig | None) -> dict[str, str]:
    """Field path → recorded value, for every secret the config holds (``env.K``, ``headers.H``,
    ``oauth.clientSecret``, ``oauth.privateKey``, ``oauth.idp.clientSecret``)."""
    if isinstance(config, StdioServerConfig):
        return {f"env.{key}": value for key, value in config.env.items()}
    if not isinstance(config, HttpServerConfig):
        return {}
    found = {f"headers.{name}": value for name, value in config.headers.items()}
    oauth = config.oauth
    if oauth is not None:
        for wire, attribute in OAUTH_FIELDS:
            if (value := getattr(oauth, attribute)) is not None:
                found[f"oauth.{wire}"] = value
        if oauth.idp is not None and oauth.idp.client_secret is not None:
            found["oauth.idp.clientSecret"] = oauth.idp.client_secret
    return found


def with_values(config: McpServerConfig, values: dict[str, str]) -> McpServerConfig:
    """``config`` with the secret fields in ``values`` replaced (the rest as they were)."""
    if not values:
        return config
    update: dict[str, Any] = {}
    if isinstance(config, StdioServerConfig):
        update["env"] = {key: values.get(f"env.{key}", value) for key, value in config.env.items()}
        return config.model_copy(update=update)
    assert isinstance(config, HttpServerConfig)
    update["headers"] = {name: values.get(f"headers.{name}", value) for name, value in config.headers.items()}
    oauth = config.oauth
    if oauth is not None:
        changes: dict[str, Any] = {
            attribute: values[f"oauth.{wire}"] for wire, attribute in OAUTH_FIELDS if f"oauth.{wire}" in values
        }
        if oauth.idp is not None and "oauth.idp.clientSecret" in values:
            changes["idp"] = oauth.idp.model_copy(update={"client_secret": values["oauth.idp.clientSecret"]})
        update["oauth"] = oauth.model_copy(update=changes)
    return config.model_copy(update=update)


def seal(store: SecretStore, name: str, config: McpServerConfig, stored: McpServerConfig | None) -> McpServerConfig:
    """Keep every value the store does not hold yet (a new one, or one still in the file) under a fresh item; a
    reference the stored config records at the same field stays. Items written before a failure are dropped."""
    kept = secret_fields(stored)
    written: dict[str, str] = {}
    try:
        for field, value in secret_fields(config).items():
            if is_reference(value) and kept.get(field) == value:
                continue
            recorded = store.keep(name, field, value)
            if recorded != value:
                written[field] = recorded
    except BaseException:
        forget(store, name, written)
        raise
    return with_values(config, written)


def forget(store: SecretStore, name: str, recorded: dict[str, str]) -> None:
    """Drop the items behind ``recorded`` (field → recorded value); best effort, after the files stopped naming
    them (one left behind holds a value nothing points at, never a value in use)."""
    for field, value in recorded.items():
        try:
            store.forget(name, field, value)
        except AppError:
            continue


def left_behind(before: McpServerConfig | None, after: McpServerConfig | None) -> dict[str, str]:
    """The recorded values ``before`` had that ``after`` no longer records (their items can go)."""
    now = set(secret_fields(after).values())
    return {field: value for field, value in secret_fields(before).items() if value not in now}


def reveal(store: SecretStore, name: str, config: McpServerConfig, prefix: str = "") -> McpServerConfig:
    """The config with the values of its secrets (those whose path starts with ``prefix``), for a start
    (``secretStoreLocked``, ``missingSecret``); a ``***`` (a thread's record of an app server) stands for what the
    app's config of ``name`` records now, at the same destination only. Blocks."""
    recorded = _references(config, prefix)
    if REDACTED in recorded.values():
        from mcp_runtime.secrets.store import app_secrets

        current = app_secrets(name, config)
        recorded = {f: current.get(f, value) if value == REDACTED else value for f, value in recorded.items()}
        for field, value in recorded.items():
            if value == REDACTED:
                raise AppError(
                    "missingSecret",
                    f"{field} of server {name!r} is no longer kept for this destination: send it again",
                    field=field,
                    server=name,
                )
    return with_values(config, {field: store.reveal(name, field, value) for field, value in recorded.items()})


def _references(config: McpServerConfig, prefix: str) -> dict[str, str]:
    return {
        f: v for f, v in secret_fields(config).items() if f.startswith(prefix) and (is_reference(v) or v == REDACTED)
    }


def for_thread_record(servers: dict[str, McpServerConfig], inline: set[str]) -> dict[str, McpServerConfig]:
    """The configs a thread records (``threads/<id>.json``): an app server's secrets as ``***`` (its servers get
    what the app keeps at their next start, so a changed key reaches running threads too), an inline server's kept
    in the store like any other (references with the keychain). Blocks."""
    from mcp_runtime.secrets.store import secret_store

    recorded: dict[str, McpServerConfig] = {}
    try:
        for name, config in servers.items():
            if name in inline:
                recorded[name] = seal(secret_store(), name, config, None)
            else:
                recorded[name] = with_values(config, dict.fromkeys(secret_fields(config), REDACTED))
    except BaseException:
        for name in inline & set(recorded):
            forget(secret_store(), name, left_behind(recorded[name], servers[name]))
        raise
    return recorded


async def revealed(name: str, config: McpServerConfig, prefix: str = "") -> McpServerConfig:
    """:func:`reveal` with the store of this run, in a worker thread (a config holding no reference costs
    nothing)."""
    if not _references(config, prefix):
        return config
    import anyio

    from mcp_runtime.secrets.store import secret_store

    return await anyio.to_thread.run_sync(reveal, secret_store(), name, config, prefix)
