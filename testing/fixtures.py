"""Commands that start the bundled fixture servers and the pinned npm servers, for configs in tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "scripts" / "smoke" / "fixtures"
NODE_MODULES = ROOT / "node_modules"


def script(name: str, *args: str) -> list[str]:
    return [sys.executable, str(FIXTURES / name), *args]


def fixture_config(*args: str, **extra: object) -> dict[str, object]:
    """A stdio server config for the SDK fixture server."""
    command = script("fixture_server.py", *args)
    return {"command": command[0], "args": command[1:], **extra}


MARK_START = 'echo $$ >> "$0"; exec "$@"'
"""A shell line that appends its pid to the file in ``$0`` and becomes the command after it: one line per process
started (the shell's pid is the server's after ``exec``), the file's modification time saying when."""


def marked_fixture_config(marker: Path, **extra: object) -> dict[str, object]:
    """:func:`fixture_config` started through :data:`MARK_START`, writing to ``marker``."""
    return {"command": "/bin/sh", "args": ["-c", MARK_START, str(marker), *script("fixture_server.py")], **extra}


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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def everything_http(port: int | None = None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """npm server-everything over Streamable HTTP (its ``streamableHttp`` mode, on ``PORT``): its URL and process,
    once it listens; stopped on exit."""
    port = port or free_port()
    entry = NODE_MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    env = {**os.environ, "PORT": str(port)}
    process = subprocess.Popen(
        ["node", str(entry), "streamableHttp"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if b"listening on port" in line:
                break
        else:
            raise AssertionError("server-everything did not start listening")
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.kill()
        process.wait()
