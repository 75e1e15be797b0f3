"""How a stored config is shown, compared and edited: redaction, lossless ``***`` edits, merge patches."""

from __future__ import annotations

from typing import Any

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


def restore_redacted(config: McpServerConfig, stored: McpServerConfig | None, *, at: str = "config") -> McpServerConfig:
    """Lossless editing: each ``***`` keeps the stored value at the same env key or header name.

    A ``***`` where nothing is stored is ``redactedValue`` (it would otherwise become the value).
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
    """``patch`` applied to the stored config as written, then validated as a whole (``***`` kept)."""
    config = parse_server_config(name, merge_patch(to_wire(stored), patch))
    return restore_redacted(config, stored)
