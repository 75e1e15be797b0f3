"""Large answers from real servers (SPEC §4, §5, §13): a 64 MiB file read through npm server-filesystem is
answered, projected and archived with the connection alive; the official PDF App server's 4.3 MB view is read
whole, by the management connection and by a thread."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_runtime.limits import MAX_RESULT_BYTES
from testing.daemon_client import Daemon, running_daemon
from testing.fixtures import NODE_MODULES, filesystem_config, pdf_config
from testing.threads import START_TIMEOUT, call, start_thread

pytestmark = pytest.mark.daemon

BIG_CALL_S = 180.0
LINE = b"2026-12-03T21:00:00Z INFO a line of a large log, as a user asks a model to read one\n"


def _log_file(folder: Path, size: int) -> Path:
    """A text file of exactly ``size`` bytes, written without holding it whole."""
    path = folder / "big.log"
    block = LINE * ((1 << 20) // len(LINE))
    with path.open("wb") as out:
        left = size
        while left > 0:
            out.write(block[:left])
            left -= min(left, len(block))
    return path


def _starts(daemon: Daemon, thread_id: str, name: str) -> int:
    updates = daemon.notifications("mcpServer/startupStatus/updated")
    return sum(1 for u in updates if (u["threadId"], u["name"], u["status"]) == (thread_id, name, "starting"))


def test_a_64_mib_file_read_is_answered_projected_and_archived_and_the_connection_lives(
    daemon: Daemon, tmp_path: Path
) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    path = _log_file(folder, MAX_RESULT_BYTES)
    config = filesystem_config(folder, toolTimeoutMs=int(BIG_CALL_S * 1000))
    thread_id = start_thread(daemon, mcpServers={"fs": config})
    params = {"threadId": thread_id, "server": "fs", "tool": "read_text_file", "arguments": {"path": str(path)}}
    result = daemon.request("mcpServer/tool/call", params, timeout=BIG_CALL_S)

    projection = result["projection"]
    # Too large to carry in an answer a client reads: the projection answers, and the whole is in the archive.
    assert projection["contentOmitted"] is True and projection["truncated"] is True
    assert result["content"] == [{"type": "text", "text": projection["text"]}]
    assert projection["text"].startswith('{"content":[{"type":"text","text":"' + LINE.decode()[:-1])
    [ref] = projection["refs"]
    assert ref["kind"] == "text" and ref["bytes"] > 2 * MAX_RESULT_BYTES  # content and structuredContent
    tail = daemon.request(
        "thread/context/read", {"threadId": thread_id, "ref": ref["ref"], "offset": ref["bytes"] - 4096, "limit": 4096}
    )
    with path.open("rb") as log_file:
        log_file.seek(-200, 2)
        file_end = log_file.read().decode()
    assert tail["nextOffset"] is None and tail["data"].endswith(json.dumps(file_end)[1:-1] + '"}}')

    starts = _starts(daemon, thread_id, "fs")
    listed = call(daemon, thread_id, "fs", "list_allowed_directories", {})
    assert str(folder.resolve()) in listed["content"][0]["text"]
    assert _starts(daemon, thread_id, "fs") == starts, "the same connection answered"


def test_the_pdf_app_servers_view_is_read_whole_by_both_owners(data_dir: Path) -> None:
    view = (NODE_MODULES / "@modelcontextprotocol" / "server-pdf" / "dist" / "mcp-app.html").read_text()
    assert len(view.encode()) > 4 * 1024 * 1024  # the official view, over the old 4 MiB cap
    with running_daemon(data_dir) as daemon:
        daemon.initialize(mcpApps={})
        daemon.request("mcpServer/create", {"name": "pdf", "config": pdf_config()})
        daemon.request("mcpServer/start", {"name": "pdf"}, timeout=START_TIMEOUT)
        tools = daemon.request("mcpTool/list", {"server": "pdf"})["data"]
        [display] = [t for t in tools if t["tool"] == "display_pdf"]
        uri = display["ui"]["resourceUri"]
        thread_id = start_thread(daemon, servers=["pdf"])
        for owner in ({}, {"threadId": thread_id}):
            read = {"server": "pdf", "uri": uri, **owner}
            [content] = daemon.request("mcpServer/resource/read", read, timeout=START_TIMEOUT)["contents"]
            assert content["text"] == view and content["mimeType"] == "text/html;profile=mcp-app"
        rows = daemon.request("mcpServerStatus/list", {"serverName": "pdf"})["data"]
        assert rows[0]["runtimeStatus"] == "connected" and len(rows[0]["tools"]) == len(tools)
