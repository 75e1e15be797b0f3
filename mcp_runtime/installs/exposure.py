"""Which install option would put a secret input where anyone can read it (SPEC §14: never in a child's argv, never
in a response): an argument marked ``isSecret`` or filled from a secret input lands in the server's command line,
which every user of the machine can read; a secret in a remote's URL would be shown with the config. ``server.json``
gives such an argument no other way to reach the server, so the option is not runnable (fail closed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_.-]+)\}")


def _secret_keys(declarations: Iterable[tuple[str, Mapping[str, Any]]]) -> set[str]:
    """The input keys some declaration marks secret: the declaration itself (when it has no fixed value) or one of
    the variables of its fixed value (keys are shared: one input fills every place that names it)."""
    keys: set[str] = set()
    for key, spec in declarations:
        if spec.get("value") is None:
            if spec.get("isSecret"):
                keys.add(key)
            continue
        keys.update(name for name, variable in (spec.get("variables") or {}).items() if variable.get("isSecret"))
    return keys


def _exposed_by(key: str, spec: Mapping[str, Any], secret: set[str]) -> str | None:
    """The secret input an argument carries, if any."""
    if spec.get("isSecret"):
        return key
    if spec.get("value") is None:
        return key if key in secret else None
    variables = spec.get("variables") or {}
    for name in _PLACEHOLDER.findall(spec["value"]):
        if name in variables and (name in secret or variables[name].get("isSecret")):
            return str(name)
    return None


def package_exposure(package: Mapping[str, Any], argument_key: Any) -> str | None:
    """The secret input a package's runtime or package arguments would put in argv, if any."""
    arguments = [*package.get("runtimeArguments", []), *package.get("packageArguments", [])]
    declarations = [(argument_key(argument), argument) for argument in arguments]
    declarations += [(variable["name"], variable) for variable in package.get("environmentVariables", [])]
    secret = _secret_keys(declarations)
    for argument in arguments:
        if (exposed := _exposed_by(argument_key(argument), argument, secret)) is not None:
            return exposed
    return None


def remote_exposure(remote: Mapping[str, Any]) -> str | None:
    """The secret input a remote's URL would carry, if any (headers are kept as secrets; a URL is not)."""
    variables = remote.get("variables") or {}
    secret = _secret_keys((header["name"], header) for header in remote.get("headers", []))
    for name in _PLACEHOLDER.findall(remote.get("url", "")):
        if name in secret or (variables.get(name) or {}).get("isSecret"):
            return str(name)
    return None


def exposure_reason(key: str, where: str) -> str:
    """What the option's ``reason`` and the refused install say."""
    if where == "header":
        return f"the header {key!r} is kept only in the OS keychain, and this daemon keeps its secrets in files"
    if where == "url":
        return f"the secret input {key!r} would be part of the server's URL, which is not kept as a secret"
    return f"the secret input {key!r} would be in the server's command line, which every user of this machine can read"


def file_store_header(remote: Mapping[str, Any], keychain: bool) -> str | None:
    """A header of the remote that only the OS keychain may keep as a value (a secret-named one, SPEC §5's
    ``inlineSecret``), when this run keeps its secrets in files."""
    if keychain:
        return None
    from protocol.secrets import is_secret_name

    return next((str(h["name"]) for h in remote.get("headers", []) if is_secret_name(str(h["name"]))), None)
