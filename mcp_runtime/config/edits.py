"""How a stored config is shown, compared and edited: redaction, lossless ``***`` edits, merge patches."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from mcp_runtime.config.rules import CONFIG_ADAPTER, parse_server_config
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
    """The stored form with env and header values replaced by ``***``."""
    data = to_wire(config)
    for field in ("env", "headers"):
        if data.get(field):
            data[field] = dict.fromkeys(data[field], REDACTED)
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


def _moved(field: str, key: str, config: McpServerConfig, at: str) -> AppError:
    what = "command or args" if config.type == "stdio" else "url"
    path = f"{at}.{field}.{key}"
    message = f"keeps a stored value but the server's {what} changed: send the value again"
    return AppError("redactedValue", f"{path} {message}", path=path, errors=[{"path": path, "message": message}])


def restore_redacted(config: McpServerConfig, stored: McpServerConfig | None, *, at: str = "config") -> McpServerConfig:
    """Lossless editing: each ``***`` keeps the stored value at the same env key or header name.

    A ``***`` where nothing is stored is ``redactedValue`` (it would otherwise become the value), and so is one
    whose server now points elsewhere: a kept secret never follows a server to a new destination.
    """
    updates: dict[str, dict[str, str]] = {}
    for field in ("env", "headers"):
        values: dict[str, str] = getattr(config, field, None) or {}
        if REDACTED not in values.values():
            continue
        kept: dict[str, str] = getattr(stored, field, None) or {}
        restored = dict(values)
        for key, value in values.items():
            if value != REDACTED:
                continue
            if key not in kept:
                path = f"{at}.{field}.{key}"
                raise AppError(
                    "redactedValue",
                    f'{path} is "***" but no value is stored there: send the real value',
                    path=path,
                    errors=[{"path": path, "message": 'is "***" but no value is stored there'}],
                )
            if stored is not None and destination(config) != destination(stored):
                raise _moved(field, key, config, at)
            restored[key] = kept[key]
        updates[field] = restored
    return config.model_copy(update=updates) if updates else config


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
        for field in ("env", "headers"):
            sent = patch.get(field)
            given = {k for k, v in sent.items() if v != REDACTED} if isinstance(sent, dict) else set()
            for key in getattr(config, field, None) or {}:
                if key not in given and key in (getattr(stored, field, None) or {}):
                    raise _moved(field, key, config, "config")
    return restore_redacted(config, stored)
