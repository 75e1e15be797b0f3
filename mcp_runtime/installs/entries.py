"""A registry entry (``server.json``) turned into install options and, with the user's inputs, into an ordinary
server config: npm → ``npx``, pypi → ``uvx``, oci → ``docker run``, nuget → ``dnx``, a remote → ``http``.

Arguments become argv elements (never a shell line); ``{var}`` placeholders are filled once, only from the inputs
the entry declares, and a value inserted is never read again for placeholders.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping
from typing import Any

from mcp_runtime.installs.exposure import exposure_reason, file_store_header, package_exposure, remote_exposure
from protocol.jsonrpc import AppError

RUNTIMES = {"npm": "npx", "pypi": "uvx", "oci": "docker", "nuget": "dnx"}
_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_.-]+)\}")


def _input(key: str, spec: Mapping[str, Any], title: str | None = None) -> dict[str, Any]:
    field: dict[str, Any] = {
        "key": key,
        "title": title or key,
        "required": bool(spec.get("isRequired", False)),
        "secret": bool(spec.get("isSecret", False)),
        "format": spec.get("format", "string"),
    }
    for source, target in (("description", "description"), ("default", "default"), ("choices", "choices")):
        if spec.get(source) is not None:
            field[target] = spec[source]
    return field


class _Inputs:
    """The inputs an option declares, in order, each key once."""

    def __init__(self) -> None:
        self.fields: dict[str, dict[str, Any]] = {}

    def add(self, key: str, spec: Mapping[str, Any], title: str | None = None) -> None:
        self.fields.setdefault(key, _input(key, spec, title))

    def add_value(self, key: str, spec: Mapping[str, Any]) -> None:
        """A ``KeyValueInput`` or argument: its fixed ``value``'s variables are the inputs, else the value is."""
        if spec.get("value") is not None:
            for name, variable in (spec.get("variables") or {}).items():
                self.add(name, variable)
        else:
            self.add(key, spec)


def _argument_key(argument: Mapping[str, Any]) -> str:
    return str(argument.get("valueHint") or argument.get("name") or "argument")


def _package_inputs(package: Mapping[str, Any]) -> list[dict[str, Any]]:
    inputs = _Inputs()
    for argument in [*package.get("runtimeArguments", []), *package.get("packageArguments", [])]:
        inputs.add_value(_argument_key(argument), argument)
    for variable in package.get("environmentVariables", []):
        inputs.add_value(variable["name"], variable)
    return list(inputs.fields.values())


def _remote_inputs(remote: Mapping[str, Any]) -> list[dict[str, Any]]:
    inputs = _Inputs()
    for name in _PLACEHOLDER.findall(remote.get("url", "")):
        inputs.add(name, (remote.get("variables") or {}).get(name, {"isRequired": True}))
    for header in remote.get("headers", []):
        inputs.add_value(header["name"], header)
    return list(inputs.fields.values())


def install_options(
    server: Mapping[str, Any], which: Callable[[str], str | None] = shutil.which
) -> list[dict[str, Any]]:
    """``InstallOption``s of an entry: its packages, then its remotes."""
    options: list[dict[str, Any]] = []
    for index, package in enumerate(server.get("packages") or []):
        kind = package.get("registryType")
        transport = (package.get("transport") or {}).get("type", "stdio")
        option: dict[str, Any] = {
            "option": f"package:{index}",
            "kind": kind if kind in (*RUNTIMES, "mcpb") else "npm",
            "transport": "http" if transport == "streamable-http" else transport,
            "runnable": True,
            "inputs": _package_inputs(package),
        }
        runtime = RUNTIMES.get(kind)
        if kind == "mcpb":
            option |= {"runnable": False, "reason": "a bundle from a URL is not downloaded; install the file instead"}
        elif runtime is None:
            option |= {"runnable": False, "reason": f"packages of {kind!r} are not supported"}
        elif transport != "stdio":
            option |= {"runnable": False, "reason": "only stdio packages are started by this daemon"}
        elif (exposed := package_exposure(package, _argument_key)) is not None:
            option |= {"runnable": False, "reason": exposure_reason(exposed, "argv")}
        elif which(runtime) is None:
            option |= {"runnable": False, "missing": runtime, "reason": f"{runtime} is not installed on this machine"}
        options.append(option)
    for index, remote in enumerate(server.get("remotes") or []):
        sse = remote.get("type") == "sse"
        option = {
            "option": f"remote:{index}",
            "kind": "remote",
            "transport": "sse" if sse else "http",
            "runnable": not sse,
            "inputs": _remote_inputs(remote),
        }
        if sse:
            option["reason"] = "SSE-only remotes are not supported"
        elif (exposed := remote_exposure(remote)) is not None:
            option |= {"runnable": False, "reason": exposure_reason(exposed, "url")}
        elif (header := file_store_header(remote, _keychain())) is not None:
            option |= {"runnable": False, "reason": exposure_reason(header, "header")}
        options.append(option)
    return options


def _keychain() -> bool:
    from mcp_runtime.secrets.store import secret_store

    return secret_store().kind == "keychain"


def resolve_inputs(declared: list[dict[str, Any]], given: Mapping[str, Any]) -> dict[str, str]:
    """The value of each declared input as a string: given, else its default (``missingInput`` for a required
    one without either, ``invalidInput`` for a value outside its choices or not of its format)."""
    values: dict[str, str] = {}
    for field in declared:
        key = field["key"]
        value = given.get(key, field.get("default"))
        if value is None or value == "":
            if field["required"]:
                raise AppError("missingInput", f"the input {key!r} is required", input=key)
            continue
        text = _as_text(key, value, field.get("format") or "string")
        if field.get("choices") and text not in field["choices"]:
            raise AppError("invalidInput", f"the input {key!r} must be one of its choices", input=key)
        values[key] = text
    return values


def _as_text(key: str, value: Any, format: str) -> str:
    if format == "boolean":
        if isinstance(value, bool) or value in ("true", "false"):
            return str(value).lower()
        raise AppError("invalidInput", f"the input {key!r} must be true or false", input=key)
    if format == "number":
        if isinstance(value, bool):
            raise AppError("invalidInput", f"the input {key!r} must be a number", input=key)
        try:
            float(value)
        except (TypeError, ValueError):
            raise AppError("invalidInput", f"the input {key!r} must be a number", input=key) from None
        return str(value)
    if isinstance(value, list | dict | bool):
        raise AppError("invalidInput", f"the input {key!r} must be a string", input=key)
    return str(value)


def fill(template: str, values: Mapping[str, str], declared: Mapping[str, Any] | None) -> str:
    """``{name}`` replaced once by the value of a declared variable; anything else left as it is."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if declared is not None and name in declared and name in values:
            return values[name]
        return match.group(0)

    return _PLACEHOLDER.sub(one, template)


def _value(key: str, spec: Mapping[str, Any], values: Mapping[str, str]) -> str | None:
    if spec.get("value") is not None:
        return fill(spec["value"], values, spec.get("variables") or {})
    return values.get(key)


def _arguments(arguments: list[Mapping[str, Any]], values: Mapping[str, str]) -> list[str]:
    argv: list[str] = []
    for argument in arguments:
        value = _value(_argument_key(argument), argument, values)
        if argument.get("type") == "named":
            if value is not None:
                argv.append(f"{argument['name']}={value}")
        elif value is not None:
            argv.append(value)
    return argv


def _image(identifier: str, version: str | None) -> str:
    tail = identifier.rsplit("/", 1)[-1]
    return identifier if ":" in tail or "@" in tail or not version else f"{identifier}:{version}"


def package_config(package: Mapping[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
    """A stdio config (wire shape) for a package, its inputs resolved."""
    kind, identifier, version = package["registryType"], package["identifier"], package.get("version")
    runtime = _arguments(package.get("runtimeArguments", []), values)
    arguments = _arguments(package.get("packageArguments", []), values)
    env = {
        variable["name"]: value
        for variable in package.get("environmentVariables", [])
        if (value := _value(variable["name"], variable, values)) is not None
    }
    if kind == "npm":
        args = ["-y", *runtime, f"{identifier}@{version}", *arguments]
    elif kind == "pypi":
        args = [*runtime, f"{identifier}=={version}", *arguments]
    elif kind == "nuget":
        args = [*runtime, f"{identifier}@{version}", "--yes", *arguments]
    else:
        passed = [part for name in env for part in ("-e", name)]
        args = ["run", "-i", "--rm", *runtime, *passed, _image(identifier, version), *arguments]
    config: dict[str, Any] = {"type": "stdio", "command": RUNTIMES[kind], "args": args}
    if env:
        config["env"] = env
    return config


def remote_config(remote: Mapping[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
    """An http config (wire shape) for a streamable-http remote, its inputs resolved."""
    url = fill(remote["url"], values, {name: True for name in _PLACEHOLDER.findall(remote["url"])})
    headers = {
        header["name"]: value
        for header in remote.get("headers", [])
        if (value := _value(header["name"], header, values)) is not None
    }
    config: dict[str, Any] = {"type": "http", "url": url}
    if headers:
        config["headers"] = headers
    return config


def entry_config(server: Mapping[str, Any], option: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The config (wire shape) of one install option of an entry, from the user's inputs."""
    options = {o["option"]: o for o in install_options(server, which=lambda _: "present")}
    chosen = options.get(option)
    if chosen is None:
        raise AppError(
            "unknownRegistryEntry", f"the entry has no install option {option!r}", name=server.get("name", ""),
            option=option,
        )  # fmt: skip
    if chosen["transport"] == "sse":
        raise AppError("unsupported", "SSE-only remotes are not supported", field="remotes")
    kind, _, index = option.partition(":")
    if not chosen["runnable"]:
        field = "remotes" if kind == "remote" else "packages"
        raise AppError("unsupported", chosen.get("reason", "this install option is not supported"), field=field)
    values = resolve_inputs(chosen["inputs"], given)
    if kind == "remote":
        return remote_config(server["remotes"][int(index)], values)
    return package_config(server["packages"][int(index)], values)
