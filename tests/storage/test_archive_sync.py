"""Entries an answer refers to are written at once and forced to disk later (``put(sync=False)``, then ``sync``):
readable and whole from the moment the answer leaves, with or without the flush; a flush after the cap evicted
some of them, or after the thread's archive is gone, passes over what is gone and forgets them."""

from __future__ import annotations

from pathlib import Path

from mcp_runtime.storage.archive import ThreadArchive, stored


def put(archive: ThreadArchive, thread_id: str, data: bytes, *, sync: bool) -> str:
    ref = archive.new_ref()
    archive.put(thread_id, [(stored(ref, "text", "text/plain", data), data)], sync=sync)
    return ref


def test_an_unsynced_entry_is_whole_at_once_and_after_its_flush(tmp_path: Path) -> None:
    archive = ThreadArchive(tmp_path / "threads")
    data = b"x" * 100_000
    ref = put(archive, "thr_a", data, sync=False)
    assert archive.read("thr_a", ref, 0, len(data)).data == data
    archive.sync("thr_a")
    assert archive.read("thr_a", ref, 0, len(data)).data == data
    assert not [p for p in (tmp_path / "threads" / "thr_a.archive").iterdir() if p.name.startswith(".tmp-")]


def test_a_flush_passes_over_entries_the_cap_evicted_and_a_removed_archive(tmp_path: Path) -> None:
    archive = ThreadArchive(tmp_path / "threads", cap_bytes=64 * 1024)
    first = put(archive, "thr_a", b"a" * 40_000, sync=False)
    second = put(archive, "thr_a", b"b" * 40_000, sync=False)  # past the cap: the first is evicted unsynced
    folder = tmp_path / "threads" / "thr_a.archive"
    assert not (folder / first).exists() and (folder / second).exists()
    archive.sync("thr_a")
    assert archive.read("thr_a", second, 0, 10).data == b"b" * 10
    put(archive, "thr_b", b"c" * 1000, sync=False)
    for entry in (tmp_path / "threads" / "thr_b.archive").iterdir():
        entry.unlink()
    (tmp_path / "threads" / "thr_b.archive").rmdir()
    archive.sync("thr_b")  # nothing left to flush: no error
    archive.sync("thr_b")
