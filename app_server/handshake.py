"""The ``initialize`` answer on the start-up path, without importing pydantic.

A sidecar is waited on until it answers ``initialize``, and pydantic alone costs about 100 ms to
import here. Plainly valid params (the common case) are recognised with a strict check; anything
else goes to the catalog's pydantic model, which decides and produces the typed error. Tests check
that this path agrees with ``InitializeParams`` and that its answer validates as ``InitializeResult``.
"""

from __future__ import annotations

from typing import Any

_PARAMS_KEYS = frozenset({"clientInfo", "capabilities"})
_CLIENT_KEYS = frozenset({"name", "version", "title"})


def quick_params(params: Any) -> tuple[str, str, frozenset[str]] | None:
    """``(client name, client version, opt-outs)`` for plainly valid params, else None."""
    if not isinstance(params, dict) or not params.keys() <= _PARAMS_KEYS:
        return None
    info = params.get("clientInfo")
    if not isinstance(info, dict) or not info.keys() <= _CLIENT_KEYS:
        return None
    name, version, title = info.get("name"), info.get("version"), info.get("title", "")
    if not (isinstance(name, str) and name and isinstance(version, str) and isinstance(title, str)):
        return None
    capabilities = params.get("capabilities", {})
    if not isinstance(capabilities, dict) or "opt_out_notification_methods" in capabilities:
        return None  # unknown capabilities are ignored; the field's Python name is left to the model
    opt_outs = capabilities.get("optOutNotificationMethods", [])
    if not isinstance(opt_outs, list) or not all(isinstance(m, str) for m in opt_outs):
        return None
    return name, version, frozenset(opt_outs)


def result(
    *, version: str, protocol_version: str, client: tuple[str, str], data_dir: str, methods: list[str],
    notifications: list[str]
) -> dict[str, Any]:
    """The ``InitializeResult`` in wire form."""
    return {
        "serverInfo": {"name": "mcp-app-server", "version": version},
        "protocolVersion": protocol_version,
        "userAgent": f"mcp-app-server/{version} ({client[0]}/{client[1]})",
        "dataDir": data_dir,
        "methods": methods,
        "notifications": notifications,
    }
