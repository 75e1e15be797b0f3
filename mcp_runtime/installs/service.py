"""What the install methods do (SPEC §15), below the handlers: registry search and get shaped for the wire, an
entry or a bundle turned into a config and its ``source``, and what a stored row says of its origin."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from mcp_runtime.config.admin_policy import admin_policy
from mcp_runtime.installs import bundles, entries
from mcp_runtime.installs.origin import registry_source
from mcp_runtime.installs.registry import NotFound, RegistryClient, official_meta
from mcp_runtime.installs.schema import server_json_errors
from mcp_runtime.storage import safe_fs
from protocol.jsonrpc import AppError

if TYPE_CHECKING:
    from protocol.config import McpServerConfig

_INPUTS_FILE = "inputs.json"


@dataclass(frozen=True)
class Planned:
    """A config (wire shape) to store, the row's ``source``, and for a bundle its ``(name, version)`` and what
    :meth:`Installs.place` writes once every check has passed (the archive and the inputs kept in a file)."""

    config: dict[str, Any]
    source: str
    bundle: tuple[str, str] | None = None
    files: tuple[bundles.Bundle, dict[str, Any]] | None = None


def _kinds(server: dict[str, Any]) -> list[str]:
    kinds = [p.get("registryType") for p in server.get("packages") or []]
    kinds += ["remote"] * bool(server.get("remotes"))
    return [k for k in dict.fromkeys(kinds) if k in ("npm", "pypi", "oci", "nuget", "mcpb", "remote")]


class Installs:
    """The install side of one daemon: its registry (``--registry-url``) and its data dir."""

    def __init__(self, registry_url: str, data_dir: Path) -> None:
        self.registry_url = registry_url
        self.data_dir = data_dir
        self.registry = RegistryClient(registry_url, data_dir)

    async def search(
        self, query: str | None, cursor: str | None, limit: int, installed: dict[str, str]
    ) -> dict[str, Any]:
        """``RegistrySearchResult``: active, schema-valid latest entries; ``installed`` maps entry → alias."""
        admin_policy().check_registry(self.registry_url)
        answer = await self.registry.search(query, cursor, limit)
        body = answer.body if isinstance(answer.body, dict) else {}
        data = []
        for item in body.get("servers") or []:
            server = item.get("server") if isinstance(item, dict) else None
            if not isinstance(server, dict) or server_json_errors(server):
                continue
            status = official_meta(item).get("status", "active")
            if status != "active":
                continue
            row = {
                k: server[k] for k in ("name", "title", "description", "version", "repository", "icons") if k in server
            }
            data.append(row | {"status": status, "kinds": _kinds(server), "installedAs": installed.get(server["name"])})
        metadata = body.get("metadata")
        following = metadata.get("nextCursor") if isinstance(metadata, dict) else None
        return {"data": data, "nextCursor": following or None, "stale": answer.stale}

    async def entry(self, name: str, version: str | None) -> tuple[dict[str, Any], bool]:
        """An entry's ``server.json`` (``unknownRegistryEntry``; ``invalidParams`` with the schema's errors)."""
        admin_policy().check_registry(self.registry_url)
        try:
            answer = await self.registry.get(name, version)
        except NotFound:
            details = {"name": name} | ({"version": version} if version else {})
            raise AppError("unknownRegistryEntry", f"the registry has no entry {name!r}", **details) from None
        server = answer.body.get("server") if isinstance(answer.body, dict) else None
        errors = server_json_errors(server)
        if errors or not isinstance(server, dict):
            raise AppError("invalidParams", f"the entry {name!r} does not match the server.json schema", errors=errors)
        return server, answer.stale

    async def get(self, name: str, version: str | None) -> dict[str, Any]:
        """``RegistryGetResult``."""
        server, stale = await self.entry(name, version)
        return {"server": server, "installOptions": entries.install_options(server), "stale": stale}

    async def plan_registry(self, name: str, version: str | None, option: str, inputs: dict[str, Any]) -> Planned:
        server, _ = await self.entry(name, version)
        config = entries.entry_config(server, option, inputs)
        return Planned(config, f"registry:{server['name']}@{server['version']}")

    async def inspect(self, path: str) -> dict[str, Any]:
        """``BundleInspectResult``."""
        bundle = await anyio.to_thread.run_sync(bundles.open_bundle, path)
        manifest = bundle.manifest
        return {
            "manifest": bundles.summary(manifest),
            "inputs": bundles.user_inputs(manifest),
            "compatibility": bundles.compatibility(manifest),
            "signature": bundle.signature,
        }

    async def plan_bundle(
        self, path: str, inputs: dict[str, Any], previous: McpServerConfig | None, previous_source: str | None
    ) -> Planned:
        """Read a bundle and plan its config, writing nothing yet; ``previous`` is the stored config of an earlier
        install of a bundle (``previous_source``): when it is the same bundle, its inputs are kept where none are
        given."""
        admin_policy().check_bundles()
        bundle = await anyio.to_thread.run_sync(bundles.open_bundle, path)
        compatible = bundles.compatibility(bundle.manifest)
        if not compatible["ok"]:
            raise AppError(
                "unsupported", f"the bundle does not run here: {compatible['reason']}", field="compatibility"
            )
        same = previous is not None and (previous_source or "").startswith(f"bundle:{bundle.name}@")
        kept = self._kept_inputs(bundle, previous) if same and previous is not None else {}
        values = bundles.check_values(bundle.manifest, kept | inputs)
        folder = self.data_dir / bundles.BUNDLES / bundle.name / bundle.version
        config = bundles.bundle_config(bundle.manifest, folder, values, str(Path.home()))
        plain = {k: v for k, v in values.items() if not _sensitive(bundle.manifest, k)}
        source = f"bundle:{bundle.name}@{bundle.version}"
        return Planned(config, source, (bundle.name, bundle.version), (bundle, plain))

    async def place(self, planned: Planned) -> None:
        """Unpack a planned bundle into its folder and keep its plain inputs (after the checks, before the store)."""
        if planned.files is None:
            return
        bundle, plain = planned.files
        await anyio.to_thread.run_sync(bundles.unpack, bundle, self.data_dir)
        safe_fs.write_file(self.data_dir, f"{bundles.BUNDLES}/{bundle.name}/{_INPUTS_FILE}", _json(plain))

    def _kept_inputs(self, bundle: bundles.Bundle, previous: McpServerConfig) -> dict[str, Any]:
        import json

        raw = safe_fs.read_file(self.data_dir, f"{bundles.BUNDLES}/{bundle.name}/{_INPUTS_FILE}", 1 << 20)
        kept: dict[str, Any] = json.loads(raw) if raw else {}
        env = (bundle.manifest["server"]["mcp_config"].get("env") or {}).items()
        for name, template in env:  # a sensitive value lives only in the stored config's env
            key = template[len("${user_config.") : -1] if template.startswith("${user_config.") else None
            stored = getattr(previous, "env", None) or {}
            if key and name in stored:
                kept.setdefault(key, stored[name])
        return kept


def _sensitive(manifest: dict[str, Any], key: str) -> bool:
    return bool(((manifest.get("user_config") or {}).get(key) or {}).get("sensitive"))


def _json(value: Any) -> bytes:
    import json

    return json.dumps(value).encode()


def installed_entries(sources: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Entry name → the alias installed from it, from ``(alias, source)`` pairs."""
    return {found[0]: alias for alias, source in sources if (found := registry_source(source)) is not None}
