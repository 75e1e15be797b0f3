"""How a stored config is shown, compared and edited: redaction, lossless ``***`` edits, merge patches."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from mcp_runtime.config.rules import CONFIG_ADAPTER, parse_server_config
from mcp_runtime.secrets.configs import secret_fields, with_values
from protocol.config import McpServerConfig, as_written
from protocol.jsonrpc import AppError

REDACTED = "***"


def to_wire(config: McpServerConfig) -> dict[str, Any]:
    """The form stored and shown: what the user wrote (daemon defaults are applied when used, not stored)."""
    return as_written(config)


def normalized(config: McpServerConfig) -> dict[str, Any]:
    """The form two configs are compared in: defaults filled, sync targets and description ignored."""
    data: dict[str, Any] = CONFIG_ADAPTER.dump_python(config, mode="json")
    data.pop("apps", None)
    data.pop("description", None)
    return data


def redacted(config: McpServerConfig) -> dict[str, Any]:
    """The stored form with env and header values, and OAuth secrets given as values, replaced by ``***``."""
    data = to_wire(config)
    for field in ("env", "headers"):
        if data.get(field):
            data[field] = dict.fromkeys(data[field], REDACTED)
    oauth = data.get("oauth")
    if isinstance(oauth, dict):
        for key in ("clientSecret", "privateKey"):
            if key in oauth:
                oauth[key] = REDACTED
        if isinstance(oauth.get("idp"), dict) and "clientSecret" in oauth["idp"]:
            oauth["idp"]["clientSecret"] = REDACTED
    return data


def destination(config: McpServerConfig) -> tuple[Any, ...]:
    """Where a server's secrets go: the program and its arguments, or the URL's origin and path."""
    if config.type == "stdio":
        return ("stdio", config.command, tuple(config.args))
    url = urlsplit(config.url)
    default_port = {"https": 443, "http": 80}.get(url.scheme.lower())
    port: int | str | None
    try:
        port = url.port or default_port
    except ValueError:  # a port the rules refuse; compared as written
        port = url.netloc
    return ("http", url.scheme.lower(), (url.hostname or "").lower(), port, url.path)


def _moved(field: str, config: McpServerConfig, at: str) -> AppError:
    what = "command or args" if config.type == "stdio" else "url"
    path = f"{at}.{field}"
    message = f"keeps a stored value but the server's {what} changed: send the value again"
    return AppError("redactedValue", f"{path} {message}", path=path, errors=[{"path": path, "message": message}])


def restore_redacted(config: McpServerConfig, stored: McpServerConfig | None, *, at: str = "config") -> McpServerConfig:
    """Lossless editing: each ``***`` keeps the stored value at the same env key, header name or OAuth secret.

    A ``***`` where nothing is stored is ``redactedValue`` (it would otherwise become the value), and so is one
    whose server now points elsewhere: a kept secret never follows a server to a new destination.
    """
    kept = secret_fields(stored)
    restored: dict[str, str] = {}
    for field, value in secret_fields(config).items():
        if value != REDACTED:
            continue
        if field not in kept:
            path = f"{at}.{field}"
            raise AppError(
                "redactedValue",
                f'{path} is "***" but no value is stored there: send the real value',
                path=path,
                errors=[{"path": path, "message": 'is "***" but no value is stored there'}],
            )
        if stored is not None and destination(config) != destination(stored):
            raise _moved(field, config, at)
        restored[field] = kept[field]
    return with_values(config, restored)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch: objects merge key by key, ``null`` removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def patched(name: str, stored: McpServerConfig, patch: dict[str, Any]) -> McpServerConfig:
    """``patch`` applied to the stored config as written, then validated as a whole (``***`` kept).

    An env or header value the patch leaves in place is kept like a ``***``: only while the destination stays.
    """
    config = parse_server_config(name, merge_patch(to_wire(stored), patch))
    if config.type == stored.type and destination(config) != destination(stored):
        given = {field for field, value in _sent_secrets(patch).items() if value != REDACTED}
        kept = secret_fields(stored)
        for field in secret_fields(config):
            if field not in given and field in kept:
                raise _moved(field, config, "config")
    return restore_redacted(config, stored)


def _sent_secrets(patch: dict[str, Any]) -> dict[str, Any]:
    """The secret fields a merge patch sets, by path (``env.K``, ``headers.H``, ``oauth.clientSecret``...)."""
    sent: dict[str, Any] = {}
    for field in ("env", "headers"):
        if isinstance(patch.get(field), dict):
            sent.update({f"{field}.{key}": value for key, value in patch[field].items()})
    oauth = patch.get("oauth")
    if isinstance(oauth, dict):
        sent.update({f"oauth.{key}": oauth[key] for key in ("clientSecret", "privateKey") if key in oauth})
        if isinstance(oauth.get("idp"), dict) and "clientSecret" in oauth["idp"]:
            sent["oauth.idp.clientSecret"] = oauth["idp"]["clientSecret"]
    return sent
