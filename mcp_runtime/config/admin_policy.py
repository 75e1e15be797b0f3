"""The administrator's policy file (SPEC §15 ``--policy``): which servers, registries and bundles may get in.

Read once at start-up, before ``initialize`` is answered, with the standard library only; a file that does not
parse stops the daemon (fail closed). Every way in (create, update, import, install, start, thread start) asks
``check`` with what it knows of the server; denied wins over allowed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from protocol.jsonrpc import AppError

if TYPE_CHECKING:
    from protocol.config import McpServerConfig

_KEYS = ("allowedServers", "deniedServers", "registries", "allowBundles", "allowUserServers")
_MAX_BYTES = 1 << 20


class PolicyUnreadable(Exception):
    """The policy file cannot be read or does not parse; the message names the file and the cause (exit 2)."""


@dataclass(frozen=True)
class AdminPolicy:
    """The parsed policy; the empty policy allows everything."""

    source: str | None = None
    allowed: tuple[dict[str, Any], ...] | None = None
    denied: tuple[dict[str, Any], ...] = ()
    registries: tuple[str, ...] | None = None
    allow_bundles: bool = True
    allow_user_servers: bool = True
    raw: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """``PolicySummary``: the file in force and the keys that restrict anything."""
        restricts = [
            key
            for key, restricting in (
                ("allowedServers", self.allowed is not None),
                ("deniedServers", bool(self.denied)),
                ("registries", self.registries is not None),
                ("allowBundles", not self.allow_bundles),
                ("allowUserServers", not self.allow_user_servers),
            )
            if restricting
        ]
        return {"source": self.source, "restricts": restricts}

    def denial(self, config: McpServerConfig, source: str = "user") -> dict[str, Any] | None:
        """The rule that refuses this server (``PolicyRule``), or None."""
        facts = _facts(config, source)
        for index, entry in enumerate(self.denied):
            if _matches(entry, facts):
                return {"key": "deniedServers", "index": index, "entry": entry}
        kind = source.partition(":")[0]
        if not self.allow_user_servers and kind in ("user", "import"):
            return {"key": "allowUserServers"}
        if not self.allow_bundles and kind == "bundle":
            return {"key": "allowBundles"}
        if self.allowed is not None and not any(_matches(entry, facts) for entry in self.allowed):
            return {"key": "allowedServers"}
        return None

    def check(self, name: str | None, config: McpServerConfig, source: str = "user") -> None:
        """``policyDenied`` naming the rule, when the policy refuses this server."""
        rule = self.denial(config, source)
        if rule is not None:
            about = f"server {name!r}" if name is not None else "this server"
            details = {"rule": rule} | ({"name": name} if name is not None else {})
            raise AppError("policyDenied", f"the administrator's policy does not allow {about}", **details)

    def check_edit(self, name: str, stored: McpServerConfig, config: McpServerConfig, source: str) -> None:
        """An update: an installed server (registry or bundle) edited into another program, URL or environment is
        no longer what was installed, so it must also pass as a server the user wrote; else an allowed entry could
        be turned into anything under its name."""
        if source.partition(":")[0] in ("registry", "bundle") and _identity(config) != _identity(stored):
            self.check(name, config, "user")
        self.check(name, config, source)

    def check_registry(self, url: str) -> None:
        if self.registries is not None and url.rstrip("/") not in {r.rstrip("/") for r in self.registries}:
            raise AppError(
                "policyDenied", "the administrator's policy does not allow this registry", rule={"key": "registries"}
            )

    def check_bundles(self) -> None:
        if not self.allow_bundles:
            raise AppError(
                "policyDenied", "the administrator's policy does not allow bundles", rule={"key": "allowBundles"}
            )


def _facts(config: McpServerConfig, source: str) -> dict[str, Any]:
    kind, _, rest = source.partition(":")
    facts: dict[str, Any] = {"registryName": rest.rpartition("@")[0] if kind == "registry" else None}
    if config.type == "stdio":
        facts["argv"] = [config.command, *config.args]
    else:
        facts["url"] = config.url
    return facts


def _identity(config: McpServerConfig) -> tuple[Any, ...]:
    """What makes a server the program it is: what runs and with which variables (their names: a key's value may
    change), or where it connects."""
    if config.type == "stdio":
        variables = (tuple(sorted(config.env)), tuple(config.env_vars))
        return ("stdio", config.command, tuple(config.args), config.cwd, variables)
    return ("http", config.url)


def _matches(entry: dict[str, Any], facts: dict[str, Any]) -> bool:
    if "registryName" in entry:
        return bool(facts["registryName"]) and facts["registryName"] == entry["registryName"]
    if "command" in entry:
        argv, prefix = facts.get("argv"), entry["command"]
        if argv is None or len(argv) < len(prefix):
            return False
        first = argv[0] if "/" in prefix[0] or "\\" in prefix[0] else os.path.basename(argv[0])
        return bool(first == prefix[0] and argv[1 : len(prefix)] == prefix[1:])
    url = facts.get("url")
    return url is not None and fnmatchcase(url, entry["url"])


def _server_entries(key: str, value: Any) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list):
        raise ValueError(f"{key} must be a list")
    for index, entry in enumerate(value):
        where = f"{key}[{index}]"
        if not isinstance(entry, dict) or len(entry) != 1:
            raise ValueError(f"{where} must be an object with one of registryName, command, url")
        ((kind, rule),) = entry.items()
        if kind in ("registryName", "url") and isinstance(rule, str) and rule:
            continue
        if kind == "command" and isinstance(rule, list) and rule and all(isinstance(a, str) and a for a in rule):
            continue
        raise ValueError(f"{where} must be {{registryName: str}}, {{command: [str, ...]}} or {{url: pattern}}")
    return tuple(value)


def parse(document: Any, source: str) -> AdminPolicy:
    """The policy of a parsed JSON document (``ValueError`` naming what is wrong)."""
    if not isinstance(document, dict):
        raise ValueError("the policy must be a JSON object")
    unknown = sorted(set(document) - set(_KEYS))
    if unknown:
        raise ValueError(f"unknown keys: {', '.join(unknown)}")
    registries = document.get("registries")
    if registries is not None and not (isinstance(registries, list) and all(isinstance(r, str) for r in registries)):
        raise ValueError("registries must be a list of URLs")
    flags = {key: document.get(key, True) for key in ("allowBundles", "allowUserServers")}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise ValueError(f"{key} must be true or false")
    allowed = document.get("allowedServers")
    return AdminPolicy(
        source=source,
        allowed=None if allowed is None else _server_entries("allowedServers", allowed),
        denied=_server_entries("deniedServers", document.get("deniedServers", [])),
        registries=None if registries is None else tuple(registries),
        allow_bundles=flags["allowBundles"],
        allow_user_servers=flags["allowUserServers"],
        raw=document,
    )


def load_admin_policy(path: str) -> AdminPolicy:
    """The policy in ``path`` (``PolicyUnreadable`` for a file that cannot be read or does not parse)."""
    try:
        with open(path, "rb") as file:
            data = file.read(_MAX_BYTES + 1)
        if len(data) > _MAX_BYTES:
            raise ValueError("the file is larger than 1 MiB")
        return parse(json.loads(data), os.path.abspath(path))
    except OSError as exc:
        raise PolicyUnreadable(f"cannot read the policy file {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise PolicyUnreadable(f"the policy file {path} does not parse: {exc}") from None


_admin = AdminPolicy()


def admin_policy() -> AdminPolicy:
    """The administrator's policy in force (set once at start-up)."""
    return _admin


def set_admin_policy(value: AdminPolicy) -> None:
    global _admin
    _admin = value
