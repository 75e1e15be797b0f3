"""The adapters by app name, and how a request's ``path`` or the app's default location is resolved."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from mcp_runtime.importers import claude, claude_desktop, codex, cursor, gemini, vscode
from mcp_runtime.importers.common import AppSpec
from protocol.config import AppName
from protocol.jsonrpc import AppError

APPS: dict[AppName, AppSpec] = {
    spec.app: spec for spec in (claude.SPEC, claude_desktop.SPEC, codex.SPEC, gemini.SPEC, cursor.SPEC, vscode.SPEC)
}


def resolve_path(
    spec: AppSpec, path: Path | str | None, home: Path, env: Mapping[str, str], platform: str = sys.platform
) -> Path:
    """``path`` if given (``~`` means the daemon's HOME; it must be absolute), else the app's default."""
    if path is None:
        return spec.default_path(home, env, platform)
    text = str(path)
    if text == "~" or text.startswith("~/"):
        text = str(home) + text[1:]
    if not os.path.isabs(text):
        raise AppError(
            "invalidParams", "path must be absolute", errors=[{"path": "params.path", "message": "must be absolute"}]
        )
    return Path(os.path.normpath(text))
