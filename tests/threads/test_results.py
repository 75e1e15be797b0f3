"""Result fidelity, the projection and its archive, ``thread/context/read``, and elicitation answers that do not
fit their form — driven through the real daemon against the SDK fixture server and server-everything."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_runtime.owners.projection import PROJECTION_TEXT_BYTES, clip, project, tool_call_json
from mcp_runtime.storage.archive import ThreadArchive, stored, whole_characters
from testing.daemon_client import Daemon, DaemonError, running_daemon
from testing.fixtures import NODE_MODULES, everything_config, fixture_config
from testing.threads import START_TIMEOUT, call, error_of, start_call, start_thread

pytestmark = pytest.mark.daemon


def read_all(daemon: Daemon, thread_id: str, ref: str, limit: int) -> tuple[bytes, list[dict[str, Any]]]:
    """Page an archived entry back completely; the stored bytes and every page seen."""
    pages: list[dict[str, Any]] = []
    offset: int | None = 0
    chunks: list[bytes] = []
    while offset is not None:
        params = {"threadId": thread_id, "ref": ref, "offset": offset, "limit": limit}
        page = daemon.request("thread/context/read", params)
        assert page["offset"] == offset and page["ref"] == ref
        pages.append(page)
        text = page["mimeType"].startswith(("text/", "application/json"))
        chunks.append(page["data"].encode() if text else base64.b64decode(page["data"]))
        offset = page["nextOffset"]
    return b"".join(chunks), pages


def media_bytes(size: int) -> bytes:
    """What the fixture's ``media`` tool returns."""
    return bytes(i % 256 for i in range(size))


def archive_dir(data_dir: Path, thread_id: str) -> Path:
    return data_dir / "threads" / f"{thread_id}.archive"


# ------------------------------------------------------------------------------------------- fidelity


def test_scalar_structured_content_on_a_2026_connection(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config(protocol="2026-07-28")})
    result = call(daemon, thread_id, "fx", "scalar")
    assert result["structuredContent"] == 42
    assert result["content"] == [{"type": "text", "text": "42"}]
    assert json.loads(result["projection"]["text"])["structuredContent"] == 42
    assert result["projection"]["truncated"] is False and result["projection"]["refs"] == []


def test_small_text_result_is_its_own_projection(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config(protocol="2025-11-25")})
    result = call(daemon, thread_id, "fx", "echo", {"text": "héllo"})
    assert result["content"][0]["text"] == "héllo"
    projection = result["projection"]
    assert projection["truncated"] is False and projection["refs"] == []
    assert "héllo" in projection["text"]


# ----------------------------------------------------------------------------------- large text


def test_large_text_is_projected_behind_a_ref_and_paged_back(daemon: Daemon, data_dir: Path) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    result = call(daemon, thread_id, "fx", "big", {"bytes": 100_000})
    assert result["content"][0]["text"] == "x" * 100_000  # content stays complete
    projection = result["projection"]
    assert projection["truncated"] is True
    assert len(projection["text"].encode()) <= PROJECTION_TEXT_BYTES
    [ref] = projection["refs"]
    assert ref["kind"] == "text" and ref["bytes"] > 100_000
    data, pages = read_all(daemon, thread_id, ref["ref"], limit=30_000)
    assert len(pages) == -(-ref["bytes"] // 30_000)
    assert pages[-1]["nextOffset"] is None and all(p["bytes"] == ref["bytes"] for p in pages)
    assert len(data) == ref["bytes"] and hashlib.sha256(data).hexdigest() == ref["sha256"]
    assert data.decode().startswith(projection["text"])
    assert "x" * 100_000 in data.decode()

    # Durable: the archive survives in the data dir, 0700 folders and 0600 files.
    folder = archive_dir(data_dir, thread_id)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((data_dir / "threads").stat().st_mode) == 0o700
    files = list(folder.iterdir())
    assert [f.name for f in files] == [ref["ref"]]
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)


def test_context_read_offsets_count_bytes_and_keep_characters_whole(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    text = "é" * 12_000  # 24,000 bytes: every character is two bytes
    [ref] = call(daemon, thread_id, "fx", "echo", {"text": text})["projection"]["refs"]
    data, pages = read_all(daemon, thread_id, ref["ref"], limit=1001)  # odd: every page would split a character
    assert hashlib.sha256(data).hexdigest() == ref["sha256"]
    assert all(len(p["data"].encode()) <= 1001 for p in pages)
    first = data.index("é".encode())
    with pytest.raises(DaemonError) as inside:
        daemon.request("thread/context/read", {"threadId": thread_id, "ref": ref["ref"], "offset": first + 1})
    assert inside.value.code == -32602 and inside.value.reason == "invalidParams"
    one = daemon.request("thread/context/read", {"threadId": thread_id, "ref": ref["ref"], "offset": first, "limit": 1})
    assert one["data"] == "é" and one["nextOffset"] == first + 2  # a limit shorter than a character still advances
    end = daemon.request("thread/context/read", {"threadId": thread_id, "ref": ref["ref"], "offset": 10**9})
    assert end["data"] == "" and end["nextOffset"] is None


def test_context_read_errors_are_typed(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    bad = [
        ({"ref": "ctx_00000000000000000000_00000000"}, -32602, "threadRequired"),
        ({"threadId": "thr_nope", "ref": "ctx_00000000000000000000_00000000"}, -32010, "unknownThread"),
        ({"threadId": thread_id, "ref": "ctx_00000000000000000000_00000000"}, -32010, "unknownRef"),
        ({"threadId": thread_id, "ref": "../../mcps.json"}, -32010, "unknownRef"),
        ({"threadId": thread_id, "ref": "x", "limit": 1024 * 1024 + 1}, -32602, "invalidParams"),
        ({"threadId": thread_id, "ref": "x", "offset": -1}, -32602, "invalidParams"),
    ]
    for params, code, reason in bad:
        with pytest.raises(DaemonError) as caught:
            daemon.request("thread/context/read", params)
        assert (caught.value.code, caught.value.reason) == (code, reason), params
    assert call(daemon, thread_id, "fx", "echo", {"text": "still serving"})["content"][0]["text"] == "still serving"


# ---------------------------------------------------------------------------------------- media


@pytest.mark.parametrize("protocol", ["2026-07-28", "2025-11-25"])
def test_image_and_embedded_blob_are_archived_and_read_back(daemon: Daemon, protocol: str) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config(protocol=protocol)})
    result = call(daemon, thread_id, "fx", "media", {"bytes": 200_000})
    expected = media_bytes(200_000)
    assert base64.b64decode(result["content"][1]["data"]) == expected  # content stays complete
    projection = result["projection"]
    assert projection["truncated"] is False
    image, resource = projection["refs"]
    assert (image["kind"], image["mimeType"]) == ("image", "image/png")
    assert (resource["kind"], resource["mimeType"]) == ("resource", "application/octet-stream")
    digest = hashlib.sha256(expected).hexdigest()
    for ref in (image, resource):
        assert (ref["bytes"], ref["sha256"]) == (200_000, digest)
        assert ref["ref"] in projection["text"]
        data, pages = read_all(daemon, thread_id, ref["ref"], limit=65_536)
        assert data == expected and len(pages) == 4
    assert len(projection["text"]) < 1000  # the blobs are named, not inlined


@pytest.mark.skipif(
    not (NODE_MODULES / "@modelcontextprotocol" / "server-everything").exists(), reason="npm servers not installed"
)
def test_everything_image_is_archived(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"ev": everything_config()})
    result = call(daemon, thread_id, "ev", "get-tiny-image", {})
    images = [c for c in result["content"] if c["type"] == "image"]
    [ref] = [r for r in result["projection"]["refs"] if r["kind"] == "image"]
    data, _ = read_all(daemon, thread_id, ref["ref"], limit=1024)
    assert data == base64.b64decode(images[0]["data"])
    assert hashlib.sha256(data).hexdigest() == ref["sha256"] and ref["mimeType"] == images[0]["mimeType"]


# ---------------------------------------------------------------------------------- archive store


def test_archive_cap_drops_the_oldest_entries_first(tmp_path: Path) -> None:
    archive = ThreadArchive(tmp_path / "threads", cap_bytes=64 * 1024)
    refs = []
    for i in range(6):
        data = bytes([i]) * 20_000
        meta = stored(archive.new_ref(), "image", "image/png", data)
        archive.put("thr_a", [(meta, data)])
        refs.append(meta.ref)
    folder = tmp_path / "threads" / "thr_a.archive"
    kept = sorted(p.name for p in folder.iterdir())
    assert kept == refs[-3:]  # 3 x ~20 KB fit in 64 KiB; the three oldest were dropped
    assert sum(p.stat().st_size for p in folder.iterdir()) <= 64 * 1024
    chunk = archive.read("thr_a", refs[-1], 0, 10)
    assert chunk.data == bytes([5]) * 10 and chunk.total == 20_000
    with pytest.raises(Exception) as dropped:
        archive.read("thr_a", refs[0], 0, 10)
    assert getattr(dropped.value, "reason", None) == "unknownRef"
    # One result that cannot fit at all is refused, and nothing is dropped for it.
    huge = b"z" * 70_000
    with pytest.raises(Exception) as refused:
        archive.put("thr_a", [(stored(archive.new_ref(), "image", None, huge), huge)])
    assert getattr(refused.value, "reason", None) == "responseTooLarge"
    assert sorted(p.name for p in folder.iterdir()) == kept


def test_archive_never_follows_a_symlink(tmp_path: Path) -> None:
    threads = tmp_path / "threads"
    threads.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (threads / "thr_b.archive").symlink_to(elsewhere)
    archive = ThreadArchive(threads)
    data = b"secret"
    with pytest.raises(Exception) as refused:
        archive.put("thr_b", [(stored(archive.new_ref(), "image", None, data), data)])
    assert getattr(refused.value, "reason", None) == "unsafePath"
    assert list(elsewhere.iterdir()) == []


def test_archive_sweeps_temp_files_left_by_a_killed_daemon(tmp_path: Path) -> None:
    folder = tmp_path / "threads" / "thr_c.archive"
    folder.mkdir(parents=True, mode=0o700)
    (folder / ".tmp-ctx_00000000000000000001_00000000").write_bytes(b"half")
    archive = ThreadArchive(tmp_path / "threads")
    data = b"whole"
    archive.put("thr_c", [(stored(archive.new_ref(), "audio", "audio/wav", data), data)])
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []
    assert os.stat(folder).st_mode & 0o777 == 0o700


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)
EXTRA = st.dictionaries(st.sampled_from(["x", "zz", "annotations_x"]), JSON, max_size=2)
"""Members a server may add to a block: kept as they came."""
ITEM = st.one_of(
    st.builds(lambda text, extra: {**extra, "text": text, "type": "text"}, st.text(max_size=40), EXTRA),
    st.builds(
        lambda data, kind, extra: {"mimeType": f"{kind}/x", "type": kind, "data": base64.b64encode(data).decode()}
        | extra,
        st.binary(max_size=16),
        st.sampled_from(["image", "audio"]),
        EXTRA,
    ),
    st.builds(
        lambda name, extra: {"name": name, **extra, "type": "resource_link", "uri": "file:///a"},
        st.text(max_size=8),
        EXTRA,
    ),
    st.builds(
        lambda text, blob: {"type": "resource", "resource": {"uri": "file:///b", "text": text} if blob is None
                            else {"blob": base64.b64encode(blob).decode(), "uri": "file:///b"}},
        st.text(max_size=8),
        st.none() | st.binary(max_size=8),
    ),
)
"""Valid MCP content blocks (the session has checked every block before the runtime sees it), members in any
order."""


@given(
    content=st.lists(ITEM, max_size=4),
    members=st.dictionaries(
        st.sampled_from(["structuredContent", "_meta", "isError", "projection", "meta", "is_error", "zzz", "a"]),
        JSON,
        max_size=4,
    ),
)
def test_the_tool_call_answer_is_the_models_json(content: list[Any], members: dict[str, Any]) -> None:
    """``tool_call_json`` writes with orjson the JSON value ``ToolCallResult`` would write (members a server added
    included, a ``projection`` it sent replaced), so the answer is the catalog's model without building it. Equal
    as JSON values: the model orders an object's members by its fields, the server's order is kept here."""
    from protocol.tool import ToolCallResult

    if not isinstance(members.get("_meta"), dict | None):
        members["_meta"] = {"v": members["_meta"]}  # the SDK only hands over an object there
    if not isinstance(members.get("isError"), bool | None):
        members["isError"] = True
    result = {"content": content, **members}
    refs = iter(f"ctx_{i:020d}_00000000" for i in range(100))
    projection = project(result, lambda: next(refs)).projection
    model = ToolCallResult.model_validate({**result, "projection": projection}, by_name=False)
    assert json.loads(tool_call_json(result, projection)) == json.loads(model.model_dump_json())


def test_clip_and_character_boundaries() -> None:
    text = "a" + "€" * 10_000  # 3-byte characters
    clipped, cut = clip(text)
    assert cut and len(clipped.encode()) <= PROJECTION_TEXT_BYTES and text.startswith(clipped)
    assert clip("short") == ("short", False)
    encoded = "€€".encode()
    assert whole_characters(encoded, 4) == "€".encode()
    assert whole_characters(encoded, 1) == "€".encode()
    assert whole_characters(encoded, 6) == encoded


# ---------------------------------------------------------------------------------- elicitation


@pytest.mark.parametrize("protocol", ["2026-07-28", "2025-11-25"])
def test_non_fitting_elicitation_answer_is_a_reasoned_cancel(daemon: Daemon, protocol: str) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config(protocol=protocol)})
    answers: list[tuple[Any, list[str]]] = [
        ({"action": "accept", "content": {"name": "Ann", "age": "seven"}}, ["age"]),
        ({"action": "accept", "content": {"name": "Ann"}}, [""]),
        ({"action": "accept"}, ["", ""]),
        ({"action": "maybe"}, ["action"]),
        ({"action": "accept", "content": ["Ann", 7]}, ["content"]),
    ]
    for answer, paths in answers:
        request_id = start_call(daemon, thread_id, "fx", "ask", {"question": "Who?"})
        request = daemon.wait_server_request("mcpServer/elicitation/request", timeout=START_TIMEOUT)
        daemon.answer(request["id"], answer)
        resolved = daemon.wait_notification("serverRequest/resolved", lambda p, i=request["id"]: p["requestId"] == i)
        assert resolved["action"] == "cancel" and resolved["reason"] == "invalidElicitationResponse", answer
        assert [e["path"] for e in resolved["errors"]] == paths and all(e["message"] for e in resolved["errors"])
        # The server was told cancel: the tool reports the action it got.
        result = daemon.wait_response(request_id)["result"]
        assert json.loads(result["content"][0]["text"]) == {"action": "cancel"}, answer

    # The user's own cancel carries no reason; a fitting accept goes through.
    request_id = start_call(daemon, thread_id, "fx", "ask", {"question": "Who?"})
    request = daemon.wait_server_request("mcpServer/elicitation/request")
    daemon.answer(request["id"], {"action": "cancel"})
    resolved = daemon.wait_notification("serverRequest/resolved", lambda p: p["requestId"] == request["id"])
    assert resolved == {"threadId": thread_id, "requestId": request["id"], "action": "cancel"}
    assert json.loads(daemon.wait_response(request_id)["result"]["content"][0]["text"]) == {"action": "cancel"}

    request_id = start_call(daemon, thread_id, "fx", "ask", {"question": "Who?"})
    request = daemon.wait_server_request("mcpServer/elicitation/request")
    daemon.answer(request["id"], {"action": "accept", "content": {"name": "Bo", "age": 3}})
    resolved = daemon.wait_notification("serverRequest/resolved", lambda p: p["requestId"] == request["id"])
    assert resolved == {"threadId": thread_id, "requestId": request["id"], "action": "accept"}
    assert json.loads(daemon.wait_response(request_id)["result"]["content"][0]["text"])["action"] == "accept"


def test_error_answer_to_an_elicitation_is_a_plain_cancel(daemon: Daemon) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    request_id = start_call(daemon, thread_id, "fx", "ask", {"question": "Who?"})
    request = daemon.wait_server_request("mcpServer/elicitation/request", timeout=START_TIMEOUT)
    daemon.send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no forms here"}})
    resolved = daemon.wait_notification("serverRequest/resolved", lambda p: p["requestId"] == request["id"])
    assert resolved == {"threadId": thread_id, "requestId": request["id"], "action": "cancel"}
    response = daemon.wait_response(request_id)
    assert "result" in response, error_of(response)
    assert json.loads(response["result"]["content"][0]["text"]) == {"action": "cancel"}


@given(st.text(min_size=0, max_size=300), st.integers(min_value=1, max_value=40))
def test_paging_text_by_bytes_reassembles_it(text: str, limit: int) -> None:
    encoded = text.encode()
    offset, pages = 0, []
    while offset < len(encoded):
        page = whole_characters(encoded[offset : offset + limit + 3], limit)
        page.decode()  # every page is whole characters
        assert page and (len(page) <= limit or len(page.decode()) == 1)
        pages.append(page)
        offset += len(page)
    assert b"".join(pages) == encoded


def test_archived_context_survives_a_restart_and_the_thread_archive(data_dir: Path) -> None:
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
        [ref] = call(daemon, thread_id, "fx", "media", {"bytes": 5000})["projection"]["refs"][:1]
        daemon.request("thread/archive", {"threadId": thread_id})
        assert daemon.close() == 0
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        data, _ = read_all(daemon, thread_id, ref["ref"], limit=4096)
        assert data == media_bytes(5000)
