"""OAuth helpers shared by the black-box tests: the test plays the browser, reads what the daemon stored, waits for
a token's expiry (polling the clock until the stored expiry has passed: a condition, not a race)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import httpx2

from tests.support.daemon_client import Daemon, JsonLinesClient

TIMEOUT = 60.0


def browse(authorization_url: str) -> httpx2.Response:
    """What a browser does: the fixture's /authorize redirects to our loopback callback, which we follow."""
    location = httpx2.get(authorization_url, follow_redirects=False).headers["location"]
    return httpx2.get(location, follow_redirects=False)


def login(d: Daemon, name: str, **params: Any) -> dict[str, Any]:
    started = d.request("mcpServer/oauth/login", {"name": name, **params}, timeout=60)
    browse(started["authorizationUrl"])
    return d.wait_notification("mcpServer/oauthLogin/completed", lambda p: p["loginId"] == started["loginId"],
                               timeout=60)


def stored_tokens(data_dir: Path) -> list[str]:
    document = json.loads((data_dir / "credentials.json").read_text())
    return [value for entry in document["entries"].values() for value in entry["tokens"].values()
            if isinstance(value, str) and len(value) > 12]


def wait_for_expiry(data_dir: Path) -> None:
    """Until the stored access token has expired (the fixture's copy expired no later)."""
    entries = json.loads((data_dir / "credentials.json").read_text())["entries"].values()
    expires_at = max(entry.get("expiresAt") or 0 for entry in entries)
    while time.time() <= expires_at + 0.05:
        time.sleep(0.05)


def tool_call(thread_id: str, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"threadId": thread_id, "server": "sec", "tool": tool, "arguments": arguments or {}}


def fixture_stats(d: JsonLinesClient, thread_id: str) -> dict[str, int]:
    result = d.request("mcpServer/tool/call", tool_call(thread_id, "stats"), timeout=TIMEOUT)
    return result["structuredContent"]  # type: ignore[no-any-return]


def free_port() -> int:
    """A port nothing listens on now (the daemon binds it again when a login starts)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
