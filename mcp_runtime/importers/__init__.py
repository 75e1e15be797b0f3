"""Import from and sync to other apps' MCP configs (Claude Code, Claude Desktop, Codex, Gemini CLI, Cursor, VS Code).

Public API for the ``mcpServer/importFromApp`` and ``mcpServer/syncAllToLive`` handlers:

- :func:`plan_import` reads one app's config and returns an :class:`ImportPlan` (nothing is written; the
  handler creates ``plan.to_create`` with ``source=plan.source`` unless ``dryRun``). A missing file raises
  ``AppError("unknownResource")``, a file that does not parse ``AppError("invalidParams")``.
- :func:`sync_app` writes the given servers into one app's live config and returns its ``SyncAppResult``;
  file problems are reported in ``result.error`` (reason ``parseError`` for a file that does not parse).

Default locations derive from the daemon's ``home`` and ``env`` (``CODEX_HOME``, ``XDG_CONFIG_HOME``,
``CLAUDE_CONFIG_DIR``, ``APPDATA``), never from the real user's home.
"""

from mcp_runtime.importers.importer import ImportPlan, plan_import
from mcp_runtime.importers.registry import APPS, resolve_path
from mcp_runtime.importers.sync import sync_app

__all__ = ["APPS", "ImportPlan", "plan_import", "resolve_path", "sync_app"]
