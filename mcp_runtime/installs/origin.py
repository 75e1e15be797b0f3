"""Where a stored server was installed from, as ``mcpServer/list`` shows it (``installedFrom``): read from its
``source`` and the registry's last answers, without a request and without loading the install machinery."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mcp_runtime.storage import safe_fs
from protocol.jsonrpc import AppError

LATEST_FILE = "registry-cache/latest.json"
"""Entry name → the latest version the registry named in its last answers."""


def registry_source(source: str) -> tuple[str, str] | None:
    """``(name, version)`` of a ``registry:<name>@<version>`` source."""
    kind, _, rest = source.partition(":")
    name, _, version = rest.rpartition("@")
    return (name, version) if kind == "registry" and name else None


def latest_versions(data_dir: Path) -> dict[str, str]:
    """What ``LATEST_FILE`` holds (empty when it is missing or unreadable)."""
    try:
        data = safe_fs.read_file(data_dir, LATEST_FILE, 4 << 20)
        known = json.loads(data) if data else {}
    except (OSError, ValueError, AppError):
        return {}
    return known if isinstance(known, dict) else {}


class Origins:
    """``InstalledFrom`` of stored rows; the registry's last answers are read once, on the first registry row."""

    def __init__(self, registry_url: str, data_dir: Path) -> None:
        self._registry_url = registry_url
        self._data_dir = data_dir
        self._latest: dict[str, str] | None = None

    def of(self, source: str) -> dict[str, Any] | None:
        found = registry_source(source)
        if found is not None:
            if self._latest is None:
                self._latest = latest_versions(self._data_dir)
            latest = self._latest.get(found[0])
            return {
                "registry": self._registry_url,
                "name": found[0],
                "version": found[1],
                "updateAvailable": latest is not None and latest != found[1],
            }
        kind, _, rest = source.partition(":")
        if kind == "bundle":
            name, _, version = rest.rpartition("@")
            return {"bundle": True, "name": name, "version": version, "updateAvailable": False}
        return None


_BUNDLE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def remove_bundle(data_dir: Path, source: str) -> None:
    """Remove the files of a bundle install (``source`` ``bundle:<name>@<version>``); other sources: nothing."""
    kind, _, rest = source.partition(":")
    name = rest.rpartition("@")[0]
    if kind == "bundle" and _BUNDLE_NAME.fullmatch(name):
        shutil.rmtree(data_dir / "bundles" / name, ignore_errors=True)


def check_bundle_free(sources: Iterable[tuple[str, str]], bundle: str, name: str) -> None:
    """``serverExists`` when the bundle is installed under another server's name (``(alias, source)`` pairs): two
    servers would share one folder, and an upgrade or a delete of one would take the other's files."""
    for alias, source in sources:
        if alias != name and source.startswith(f"bundle:{bundle}@"):
            raise AppError(
                "serverExists",
                f"the bundle {bundle!r} is installed as server {alias!r}: install it under that name to upgrade it",
                name=alias,
            )
