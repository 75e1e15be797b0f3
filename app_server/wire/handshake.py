"""The ``initialize`` answer, built without pydantic: a host waits on its sidecar until it comes.

Plainly valid params (the common case) are read by a strict check; anything else goes to the catalog's model,
which decides and gives the typed error. The answer's bytes are ``InitializeResult``'s (a test proves it), and
both answerers (the start-up reader and the processor) write them with this one function.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from protocol.constants import NAME, PROTOCOL_VERSION, VERSION
from protocol.encoding import compact_stdlib

_policy_summary: dict[str, Any] = {"source": None, "restricts": []}


def describe_policy(summary: dict[str, Any]) -> None:
    """The administrator's policy as ``initialize`` reports it (``PolicySummary``), set once by start-up."""
    global _policy_summary
    _policy_summary = summary


_PARAMS_KEYS = frozenset({"clientInfo", "capabilities"})
_CLIENT_KEYS = frozenset({"name", "version", "title"})

Client = tuple[str, str, frozenset[str], bool]
"""A client's name, version, notification opt-outs and whether it renders MCP Apps views, as its ``initialize``
gave them."""


class ServedEarly(NamedTuple):
    """What start-up's reader served on stdio before the event loop ran, handed to the processor with the bytes it
    did not serve (a named tuple: the reader runs before ``dataclasses`` is worth importing)."""

    client: Client | None
    """The ``initialize`` it answered, if it did."""
    answered: tuple[int | str, float, int] | None
    """That answer's id, the seconds it took and its size (for its ``debug`` line)."""
    initialized: bool
    """Whether the ``initialized`` notification came too."""


def quick_params(params: Any) -> Client | None:
    """``(client name, client version, opt-outs, renders views)`` for plainly valid params, else None."""
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
    apps = capabilities.get("mcpApps")
    if apps is not None and not isinstance(apps, dict):
        return None
    return name, version, frozenset(opt_outs), apps is not None


def initialize_line(
    request_id: int | str, client: tuple[str, str], data_dir: str, secret_store: dict[str, str]
) -> bytes:
    """The response line: ``InitializeResult`` in its field order, as compact JSON."""
    from protocol.catalog import METHODS, NOTIFICATIONS

    result = {
        "serverInfo": {"name": NAME, "version": VERSION},
        "protocolVersion": PROTOCOL_VERSION,
        "userAgent": f"{NAME}/{VERSION} ({client[0]}/{client[1]})",
        "dataDir": data_dir,
        "methods": sorted(m for m in METHODS if m != "initialize"),
        "notifications": sorted(NOTIFICATIONS),
        "policy": _policy_summary,
        "secretStore": secret_store,
    }
    body = compact_stdlib(result)  # the start-up reader answers before orjson loads; the bytes are the same
    return b'{"jsonrpc":"2.0","id":' + compact_stdlib(request_id) + b',"result":' + body + b"}\n"
