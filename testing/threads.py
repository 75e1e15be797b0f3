"""Thread helpers shared by the black-box tests: start a thread, call a tool in it, wait for a server to be ready."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from testing.daemon_client import Daemon, DaemonError, JsonLinesClient, running_daemon

START_TIMEOUT = 40.0


def call(client: JsonLinesClient, thread_id: str, server: str, tool: str, arguments: Any = None, **extra: Any) -> Any:
    params: dict[str, Any] = {"threadId": thread_id, "server": server, "tool": tool, **extra}
    if arguments is not None:
        params["arguments"] = arguments
    return client.request("mcpServer/tool/call", params, timeout=START_TIMEOUT)


def start_call(client: JsonLinesClient, thread_id: str, server: str, tool: str, arguments: Any, **extra: Any) -> Any:
    params = {"threadId": thread_id, "server": server, "tool": tool, "arguments": arguments, **extra}
    return client.start_request("mcpServer/tool/call", params)


def error_of(response: dict[str, Any]) -> DaemonError:
    assert "error" in response, response
    return DaemonError(response["error"])


def start_thread(client: JsonLinesClient, **params: Any) -> str:
    thread_id: str = client.request("thread/start", params)["thread"]["id"]
    return thread_id


def wait_ready(client: JsonLinesClient, thread_id: str, name: str) -> None:
    client.wait_notification(
        "mcpServer/startupStatus/updated",
        lambda p: p["threadId"] == thread_id and p["name"] == name and p["status"] == "ready",
        timeout=START_TIMEOUT,
    )


@contextmanager
def listening_daemon(data_dir: Path) -> Iterator[tuple[Daemon, Path]]:
    """A daemon also listening on a short Unix socket path (sun_path is limited to ~108 bytes)."""
    with tempfile.TemporaryDirectory(prefix="mas-", dir="/tmp") as short:
        socket_path = Path(short) / "d.sock"
        with running_daemon(data_dir, args=("--listen", f"unix:{socket_path}")) as daemon:
            daemon.initialize()
            yield daemon, socket_path
