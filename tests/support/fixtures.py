"""Commands that start the bundled fixture servers and the pinned npm servers, for configs in tests."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "scripts" / "smoke" / "fixtures"
NODE_MODULES = ROOT / "node_modules"


def script(name: str, *args: str) -> list[str]:
    return [sys.executable, str(FIXTURES / name), *args]


def fixture_config(*args: str, **extra: object) -> dict[str, object]:
    """A stdio server config for the SDK fixture server."""
    command = script("fixture_server.py", *args)
    return {"command": command[0], "args": command[1:], **extra}


def everything_config(**extra: object) -> dict[str, object]:
    entry = NODE_MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    return {"command": "node", "args": [str(entry), "stdio"], **extra}


def memory_config(memory_file: Path, **extra: object) -> dict[str, object]:
    entry = NODE_MODULES / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
    return {"command": "node", "args": [str(entry)], "env": {"MEMORY_FILE_PATH": str(memory_file)}, **extra}


def filesystem_config(root: Path, **extra: object) -> dict[str, object]:
    """npm server-filesystem, allowed to read ``root`` only."""
    entry = NODE_MODULES / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
    return {"command": "node", "args": [str(entry), str(root)], **extra}


def pdf_config(**extra: object) -> dict[str, object]:
    """npm server-pdf (the official PDF MCP App) over stdio; its view is 4.3 MB."""
    entry = NODE_MODULES / "@modelcontextprotocol" / "server-pdf" / "dist" / "index.js"
    return {"command": "node", "args": [str(entry), "--stdio"], **extra}
