"""``mcpServer/importFromApp``: read one app's config and plan which servers to create (nothing written).

Each entry is translated by the app's adapter and validated by ``parse_server_config`` — the same rules as
``mcpServer/create`` — so an entry is imported whole or skipped with the typed reason it broke.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mcp_runtime.config.admin_policy import admin_policy
from mcp_runtime.config.edits import normalized
from mcp_runtime.config.policy import ConfigPolicy
from mcp_runtime.config.rules import parse_server_config
from mcp_runtime.importers.common import AppSpec
from mcp_runtime.importers.documents import parse_entries
from mcp_runtime.importers.files import UnparsableFile, read_text
from mcp_runtime.importers.registry import APPS, resolve_path
from protocol.config import AppName, McpServerConfig
from protocol.jsonrpc import AppError
from protocol.server import SkippedEntry


@dataclass
class ImportPlan:
    """What an import would do; the handler creates ``to_create`` with ``source`` unless it is a dry run."""

    app: AppName
    path: Path
    to_create: dict[str, McpServerConfig] = field(default_factory=dict)
    skipped: list[SkippedEntry] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def source(self) -> str:
        return f"import:{self.app}"


def plan_import(
    app: AppName,
    *,
    path: Path | None,
    home: Path,
    env: Mapping[str, str],
    existing: Mapping[str, McpServerConfig],
    policy: ConfigPolicy,
) -> ImportPlan:
    """Entries the deployment's ``policy`` refuses are skipped. Raise ``unknownResource`` when the file does not
    exist and ``invalidParams`` when it does not parse."""
    spec = APPS[app]
    target = resolve_path(spec, path, home, env)
    try:
        text = read_text(target)
        if text is None:
            raise AppError("unknownResource", f"no {spec.label} config at {target}", path=str(target))
        scopes = [("user", parse_entries(spec.fmt, text, spec.section))]
        if spec.more_scopes is not None:
            scopes += spec.more_scopes(text)
    except UnparsableFile as exc:
        raise AppError(
            "invalidParams", f"{target} cannot be read as {spec.label} config: {exc}", path=str(target)
        ) from exc
    plan = ImportPlan(app=app, path=target)
    seen: dict[str, str] = {}
    for scope, entries in scopes:
        for name, raw in entries.items():
            if name in seen:
                label = name[:64]
                plan.skipped.append(SkippedEntry(name=label, reason="nameConflict"))
                plan.warnings.append(f"{label}: skipped ({scope}): the {seen[name]} scope has a server with this name")
                continue
            seen[name] = scope
            _plan_entry(plan, spec, name, raw, existing, policy)
    return plan


def _plan_entry(
    plan: ImportPlan,
    spec: AppSpec,
    name: str,
    raw: object,
    existing: Mapping[str, McpServerConfig],
    policy: ConfigPolicy,
) -> None:
    label = name[:64]
    if not isinstance(raw, dict):
        plan.skipped.append(SkippedEntry(name=label, reason="invalidParams"))
        plan.warnings.append(f"{label}: skipped: the entry is not an object")
        return
    notes: list[str] = []
    try:
        config = parse_server_config(name, spec.read_entry(raw, notes))
        policy.check_transport(config, name)
        admin_policy().check(name, config, "import")
    except AppError as exc:
        plan.skipped.append(SkippedEntry(name=label, reason=exc.reason))
        plan.warnings.append(f"{label}: skipped: {exc.message}")
        return
    if name in existing:
        same = normalized(existing[name]) == normalized(config)
        plan.skipped.append(SkippedEntry(name=name, reason="alreadyPresent" if same else "serverExists"))
        if not same:
            plan.warnings.append(f"{name}: skipped: a different server with this name already exists")
        return
    plan.warnings.extend(f"{name}: {note}" for note in notes)
    plan.to_create[name] = config
