"""Installing servers (SPEC §15): the MCP Registry's entries, MCP Bundles, and the administrator's policy as the
wire shows them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from protocol.base import OpenModel, WireModel

PackageKind = Literal["npm", "pypi", "oci", "nuget", "mcpb", "remote"]
MissingRuntime = Literal["npx", "uvx", "docker", "dnx"]
InputValue = str | int | float | bool | list[str]
PolicyList = Literal["allowedServers", "deniedServers", "registries", "allowBundles", "allowUserServers"]


class RegistryRepository(OpenModel):
    """Where an entry's source code lives."""

    url: str = Field(description="The repository's URL.")
    source: str = Field(description="The hosting service, e.g. `github`.")


class RegistryIcon(OpenModel):
    """An icon the registry entry offers (an https URL; the page decides whether to load it)."""

    src: str = Field(description="The icon's URL.")


class RegistrySearchParams(WireModel):
    """`mcpServer/registry/search`: the latest active entries of the registry (`--registry-url`)."""

    query: str | None = Field(default=None, max_length=200, description="Words to look for in entry names.")
    cursor: str | None = Field(default=None, description="The `nextCursor` of the previous page.")
    limit: int | None = Field(default=None, ge=1, le=100, description="The most entries in this page (30).")


class RegistryEntry(WireModel):
    """One registry entry (its latest version), as a gallery lists it."""

    name: str = Field(description="The entry's reverse-DNS name, e.g. `io.github.user/weather`.")
    title: str | None = Field(default=None, description="A name to show to people.")
    description: str = Field(description="What the server does.")
    version: str = Field(description="The latest version.")
    status: str = Field(description="`active` (others are left out of search).")
    repository: RegistryRepository | None = Field(default=None, description="Where its source code lives.")
    icons: list[RegistryIcon] | None = Field(default=None, description="Its icons.")
    kinds: list[PackageKind] = Field(description="How it can be installed.")
    installed_as: str | None = Field(description="The stored server installed from this entry, if one is.")


class RegistrySearchResult(WireModel):
    """A page of registry entries; `stale` when the registry could not be reached and a cached answer is shown."""

    data: list[RegistryEntry] = Field(description="The entries; ones failing the published schema are left out.")
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null at the end.")
    stale: bool = Field(description="The registry was unreachable: this is the last answer it gave.")


class RegistryGetParams(WireModel):
    """`mcpServer/registry/get`: one entry with the ways this machine can install it."""

    name: str = Field(min_length=1, max_length=200, description="The entry's name.")
    version: str | None = Field(default=None, max_length=255, description="A version; absent: the latest.")


class InstallInput(WireModel):
    """A value the user gives at install (a form field)."""

    key: str = Field(description="The key to send it under in `inputs`.")
    title: str = Field(description="A label for the field.")
    description: str | None = Field(default=None, description="What it is for.")
    required: bool = Field(description="Whether the install fails `missingInput` without it.")
    secret: bool = Field(description="Show it masked; the daemon keeps it in the secret store, never in a response.")
    default: InputValue | None = Field(default=None, description="The value used when none is given.")
    choices: list[str] | None = Field(default=None, description="The only values allowed.")
    format: str | None = Field(
        default=None,
        description="`string`, `number`, `boolean`, `filepath` (registry); `directory`, `file` (bundle).",
    )
    multiple: bool | None = Field(default=None, description="A bundle input taking several values (a list).")
    min: float | None = Field(default=None, description="A bundle number's least value.")
    max: float | None = Field(default=None, description="A bundle number's greatest value.")


class InstallOption(WireModel):
    """One way to install an entry: a package or a remote."""

    option: str = Field(description="Pass as `source.registry.option` to install this way.")
    kind: PackageKind = Field(description="The package registry, or `remote`.")
    transport: Literal["stdio", "http", "sse"] = Field(description="How the daemon would talk to it.")
    runnable: bool = Field(description="Whether this daemon can install and run it here.")
    missing: MissingRuntime | None = Field(default=None, description="The program this machine lacks to run it.")
    reason: str | None = Field(default=None, description="Why it is not runnable, in plain words.")
    inputs: list[InstallInput] = Field(description="The values the user gives at install.")


class RegistryGetResult(WireModel):
    """An entry and the ways to install it."""

    server: dict[str, Any] = Field(description="The entry's `server.json`, valid against the published schema.")
    install_options: list[InstallOption] = Field(description="The ways to install it.")
    stale: bool = Field(description="The registry was unreachable: this is the last answer it gave.")


class RegistryInstallSource(WireModel):
    """Install from a registry entry."""

    name: str = Field(min_length=1, max_length=200, description="The entry's name.")
    version: str | None = Field(default=None, max_length=255, description="A version; absent: the latest.")
    option: str = Field(description="One of the entry's `installOptions[].option`.")


class BundlePath(WireModel):
    """An MCP Bundle file (`.mcpb`) on this machine, as the host's file picker gave it."""

    path: str = Field(min_length=1, max_length=4096, description="An absolute path.")


class RegistrySource(WireModel):
    """`source` for a registry entry."""

    registry: RegistryInstallSource = Field(description="The entry and the way to install it.")


class BundleSource(WireModel):
    """`source` for a bundle file."""

    bundle: BundlePath = Field(description="The bundle file.")


class InstallParams(WireModel):
    """`mcpServer/install`: turn a registry entry or a bundle into a stored server (as `mcpServer/create` does)."""

    name: str = Field(description="The server's name (alias): 1-24 of `[A-Za-z0-9_-]`, never containing `__`.")
    source: RegistrySource | BundleSource = Field(description="What to install.")
    inputs: dict[str, InputValue] | None = Field(default=None, description="Values of the entry's inputs, by key.")
    enabled: bool | None = Field(default=None, description="Whether it is enabled (default true).")


class BundleInspectParams(WireModel):
    """`mcpServer/bundle/inspect`: what a bundle file is, before the user consents to install it."""

    path: str = Field(min_length=1, max_length=4096, description="An absolute path to the `.mcpb` file.")


class BundleAuthor(OpenModel):
    """The bundle's author."""

    name: str = Field(description="The author's name.")


class BundleCapability(WireModel):
    """A tool or prompt the bundle's manifest declares."""

    name: str = Field(description="Its name.")
    description: str | None = Field(default=None, description="What it does.")


class BundleManifest(WireModel):
    """The part of a bundle's manifest a consent dialog shows."""

    name: str = Field(description="The bundle's machine name.")
    display_name: str | None = Field(default=None, description="A name to show to people.")
    version: str = Field(description="Its version.")
    author: BundleAuthor = Field(description="Who made it.")
    description: str = Field(description="What it does.")
    icon: str | None = Field(default=None, description="The icon's path inside the bundle.")
    tools: list[BundleCapability] = Field(description="The tools it declares.")
    prompts: list[BundleCapability] = Field(description="The prompts it declares.")
    manifest_version: str = Field(description="The manifest's version (0.2-0.4).")
    server_type: str = Field(description="`node`, `python`, `uv` or `binary`.")


class BundleCompatibility(WireModel):
    """Whether the bundle can run on this machine."""

    ok: bool = Field(description="It can.")
    reason: str | None = Field(default=None, description="Why not, in plain words.")


class BundleInspectResult(WireModel):
    """What the bundle is, what it asks for, whether it runs here, and whether it is signed."""

    manifest: BundleManifest = Field(description="The manifest's summary.")
    inputs: list[InstallInput] = Field(description="Its `user_config`, as form fields.")
    compatibility: BundleCompatibility = Field(description="Whether it runs here.")
    signature: Literal["signed", "unsigned", "invalid"] = Field(
        description="`signed`: a PKCS#7 signature that matches the content (the signer is not checked against a "
        "trust store); `invalid`: a signature block that does not match."
    )


class InstalledFrom(WireModel):
    """Where an installed server came from."""

    registry: str | None = Field(default=None, description="The registry's URL (absent for a bundle).")
    bundle: bool | None = Field(default=None, description="Installed from a bundle file.")
    name: str = Field(description="The entry's or bundle's name.")
    version: str = Field(description="The version installed.")
    update_available: bool = Field(description="The registry knows a newer version (from its last answer).")


class PolicyRule(WireModel):
    """The administrator's rule that refused something."""

    key: PolicyList = Field(description="The policy file's key.")
    index: int | None = Field(default=None, description="The entry's position in that list.")
    entry: dict[str, Any] | None = Field(default=None, description="The entry itself.")


class PolicySummary(WireModel):
    """What the administrator's policy restricts, so that a page can explain what is locked."""

    source: str | None = Field(description="The policy file in force; null: none.")
    restricts: list[PolicyList] = Field(description="The policy's keys that restrict anything.")
