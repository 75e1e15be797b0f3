"""MCP Apps facts the daemon and every host must agree on (generated into the TypeScript client), and the rule a
view's declared origin (`_meta.ui.csp`) must meet before any host puts it into a Content-Security-Policy."""

from __future__ import annotations

import ipaddress
import re

APPS_EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
SANDBOX_PROXY_READY = "ui/notifications/sandbox-proxy-ready"
SANDBOX_RESOURCE_READY = "ui/notifications/sandbox-resource-ready"
# `_meta.ui.permissions` key → the feature a frame's `allow` attribute grants for it.
PERMISSION_FEATURES = {
    "camera": "camera",
    "microphone": "microphone",
    "geolocation": "geolocation",
    "clipboardWrite": "clipboard-write",
}
MAX_ORIGIN_CHARS = 256

_ORIGIN = re.compile(
    r"(?P<scheme>https?|wss?)://(?P<host>\[[0-9A-Fa-f:.]+\]|[^/:?#@\[\]\\\s]+)(?::(?P<port>[0-9]{1,5}))?/?"
)
_ASCII_HOST = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".home.arpa")


def csp_origin(entry: object) -> str | None:
    """`entry` as a CSP source a view may be given: `scheme://host[:port]` with an ASCII (punycode) host, a wildcard
    only as a leading `*.` over at least two labels, never a loopback, private or local address; else None."""
    if not isinstance(entry, str) or len(entry) > MAX_ORIGIN_CHARS:
        return None
    match = _ORIGIN.fullmatch(entry)
    if match is None:
        return None
    scheme, host, port = match["scheme"], match["host"], match["port"]
    if port is not None and not 0 < int(port) <= 65535:
        return None
    wildcard = host.startswith("*.")
    name = _public_host(host[2:] if wildcard else host, wildcard)
    if name is None:
        return None
    return f"{scheme}://{'*.' if wildcard else ''}{name}{'' if port is None else f':{int(port)}'}"


def _public_host(host: str, wildcard: bool) -> str | None:
    """The host in ASCII when it names a public place; None for anything else."""
    if "*" in host:
        return None
    if host.startswith("["):
        try:
            address = ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return None
        return None if wildcard or not address.is_global else f"[{address.compressed}]"
    try:
        name = host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None
    if not _ASCII_HOST.fullmatch(name):
        return None
    if _NUMERIC_LABEL.fullmatch(name.rsplit(".", 1)[-1]):
        # A browser reads a numeric last label as an IPv4 address (`127.1` is loopback): only a public dotted quad.
        try:
            ipv4 = ipaddress.IPv4Address(name)
        except ValueError:
            return None
        return None if wildcard or not ipv4.is_global else str(ipv4)
    if name.endswith(_LOCAL_SUFFIXES):
        return None
    return name


def csp_origins(entries: object) -> tuple[list[str], list[str]]:
    """The entries that are origins (normalized, first occurrence kept) and the ones dropped, as given."""
    if not isinstance(entries, list):
        return [], [] if entries is None else [repr(entries)[:80]]
    kept: list[str] = []
    dropped: list[str] = []
    for entry in entries:
        origin = csp_origin(entry)
        if origin is None:
            dropped.append(repr(entry)[:80])
        elif origin not in kept:
            kept.append(origin)
    return kept, dropped
