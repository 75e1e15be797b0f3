"""Things planted in the context archive (SPEC §5): a folder, a FIFO or a symlink where the archive expects one of
its own files is ``unsafePath``, never blocks a worker, and never disables a cap; the caps count and evict only
the archive's own regular files, per thread (256 MiB) and per data dir (1 GiB, the archives written to longest
ago first). Measured as files on disk, driven through the real daemon and, with small caps, the archive itself.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_runtime.storage.archive import ARCHIVE_CAP_BYTES, DATA_DIR_CAP_BYTES, ThreadArchive, stored
from protocol.jsonrpc import AppError
from testing.daemon_client import Daemon, DaemonError
from testing.fixtures import fixture_config
from testing.threads import START_TIMEOUT, start_thread

pytestmark = pytest.mark.daemon

OLDEST = "ctx_00000000000000000000_00000000"
"""A ref name older than any the daemon makes: the first one a cap would evict."""
MEDIA_BYTES = 1_400_000
"""Per ``media`` call the archive gets an image and a blob of this size (the answer stays under 4 MiB)."""


def own_bytes(folder: Path) -> int:
    """Bytes of the regular files in an archive folder (what the cap counts)."""
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file() and not p.is_symlink())


def all_archives(threads: Path) -> int:
    return sum(own_bytes(folder) for folder in threads.glob("*.archive") if folder.is_dir())


def plant(folder: Path, kind: str, name: str = OLDEST) -> Path:
    path = folder / name
    if kind == "folder":
        path.mkdir()
        (path / "inside").write_bytes(b"x" * 1000)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(folder.parent)
    return path


@contextlib.contextmanager
def released(fifo: Path) -> Iterator[None]:
    """Whatever happens, a reader blocked on the planted FIFO is let go at the end (so a failing run ends)."""
    try:
        yield
    finally:
        for _ in range(64):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                break


def finishes(work: Callable[[], Any], timeout: float = 10.0) -> Any:
    """``work()``'s outcome (a value or the exception it raised), failing if it is still blocked after ``timeout``."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(work())
        except Exception as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    assert outcome, f"still blocked after {timeout} s"
    return outcome[0]


# ------------------------------------------------------------------------------ the archive, small caps


def put(archive: ThreadArchive, thread_id: str, size: int, fill: int = 1) -> str:
    data = bytes([fill]) * size
    meta = stored(archive.new_ref(), "image", "image/png", data)
    archive.put(thread_id, [(meta, data)])
    return meta.ref


@pytest.mark.parametrize("kind", ["folder", "fifo", "symlink"])
def test_a_planted_entry_never_disables_the_thread_cap(tmp_path: Path, kind: str) -> None:
    archive = ThreadArchive(tmp_path / "threads", cap_bytes=64 * 1024)
    put(archive, "thr_a", 1000)
    folder = tmp_path / "threads" / "thr_a.archive"
    planted = plant(folder, kind)
    with released(planted):
        refs = [put(archive, "thr_a", 20_000) for _ in range(20)]  # 400 KB through a 64 KiB cap
        assert own_bytes(folder) <= 64 * 1024
        assert sorted(p.name for p in folder.iterdir() if p.name != OLDEST) == refs[-3:]
        assert os.path.lexists(planted)  # not the archive's: neither counted nor removed
        error = finishes(lambda: archive.read("thr_a", OLDEST, 0, 10))
        assert isinstance(error, AppError) and error.reason == "unsafePath", error


def test_planted_temp_names_and_archive_folders_are_left_alone(tmp_path: Path) -> None:
    threads = tmp_path / "threads"
    (threads / "thr_a.archive" / ".tmp-planted").mkdir(parents=True)
    os.mkfifo(threads / "thr_b.archive")
    archive = ThreadArchive(threads, cap_bytes=64 * 1024)
    ref = put(archive, "thr_a", 1000)
    assert archive.read("thr_a", ref, 0, 10).data == b"\x01" * 10
    assert (threads / "thr_a.archive" / ".tmp-planted").is_dir()
    error = finishes(lambda: archive.put("thr_b", [(stored(archive.new_ref(), "image", None, b"x"), b"x")]))
    assert isinstance(error, AppError) and error.reason == "unsafePath", error


def test_the_data_dir_cap_removes_the_archives_written_to_longest_ago(tmp_path: Path) -> None:
    threads = tmp_path / "threads"
    archive = ThreadArchive(threads, cap_bytes=64 * 1024, data_dir_cap_bytes=150 * 1024)
    for thread_id in ("thr_1", "thr_2", "thr_3"):
        put(archive, thread_id, 30_000)
        put(archive, thread_id, 30_000)
    assert all_archives(threads) <= 150 * 1024
    assert own_bytes(threads / "thr_1.archive") == 0  # written to longest ago: removed whole
    assert own_bytes(threads / "thr_2.archive") > 0 and own_bytes(threads / "thr_3.archive") > 0
    put(archive, "thr_1", 30_000)
    put(archive, "thr_1", 30_000)  # thr_1 is the newest now: thr_2 goes next
    assert all_archives(threads) <= 150 * 1024 and own_bytes(threads / "thr_2.archive") == 0
    plant(threads / "thr_3.archive", "folder")  # a planted folder in a victim neither counts nor blocks
    for _ in range(3):
        put(archive, "thr_4", 30_000)
    assert all_archives(threads) <= 150 * 1024


def test_the_data_dir_cap_counts_what_an_earlier_run_left(tmp_path: Path) -> None:
    threads = tmp_path / "threads"
    earlier = ThreadArchive(threads, cap_bytes=64 * 1024)
    for thread_id in ("thr_1", "thr_2", "thr_3"):
        put(earlier, thread_id, 50_000)
    restarted = ThreadArchive(threads, cap_bytes=64 * 1024, data_dir_cap_bytes=120 * 1024)
    put(restarted, "thr_4", 50_000)
    assert all_archives(threads) <= 120 * 1024
    assert [own_bytes(threads / f"thr_{i}.archive") > 0 for i in range(1, 5)] == [False, False, True, True]


def test_caps_are_the_specs() -> None:
    assert (ARCHIVE_CAP_BYTES, DATA_DIR_CAP_BYTES) == (256 * 1024 * 1024, 1024 * 1024 * 1024)


# ------------------------------------------------------------------------------------ through the daemon


def media_call(daemon: Daemon, thread_id: str) -> dict[str, Any]:
    params = {"threadId": thread_id, "server": "fx", "tool": "media", "arguments": {"bytes": MEDIA_BYTES}}
    result: dict[str, Any] = daemon.request("mcpServer/tool/call", params, timeout=START_TIMEOUT)
    return result


def context_read_error(daemon: Daemon, thread_id: str, ref: str) -> DaemonError:
    with pytest.raises(DaemonError) as err:
        daemon.request("thread/context/read", {"threadId": thread_id, "ref": ref}, timeout=10)
    return err.value


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_reading_a_planted_entry_is_unsafe_path_and_blocks_nothing(daemon: Daemon, data_dir: Path, kind: str) -> None:
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    [image, _blob] = media_call(daemon, thread_id)["projection"]["refs"]
    planted = plant(data_dir / "threads" / f"{thread_id}.archive", kind)
    with released(planted):
        for _ in range(48):  # more reads than the daemon has worker threads
            err = context_read_error(daemon, thread_id, OLDEST)
            assert (err.code, err.reason) == (-32012, "unsafePath")
        page = daemon.request("thread/context/read", {"threadId": thread_id, "ref": image["ref"], "limit": 16})
        assert page["bytes"] == MEDIA_BYTES


def test_a_planted_folder_never_disables_the_cap_through_the_daemon(daemon: Daemon, data_dir: Path) -> None:
    """Issue 22.6: a folder under the oldest ref name made every large result past the cap answer -32603 and let
    the archive grow without bound. Every call answers, and the thread's files stay within 256 MiB."""
    thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
    media_call(daemon, thread_id)
    folder = data_dir / "threads" / f"{thread_id}.archive"
    planted = plant(folder, "folder")
    calls = ARCHIVE_CAP_BYTES // (2 * MEDIA_BYTES) + 12  # past the cap
    for _ in range(calls):
        media_call(daemon, thread_id)
    assert own_bytes(folder) <= ARCHIVE_CAP_BYTES
    assert own_bytes(folder) > ARCHIVE_CAP_BYTES - 8 * MEDIA_BYTES  # the newest results are kept
    assert planted.is_dir()
    assert context_read_error(daemon, thread_id, OLDEST).reason == "unsafePath"


@pytest.mark.slow
def test_all_archives_stay_within_the_data_dir_cap(daemon: Daemon, data_dir: Path) -> None:
    """Five threads of 256 MiB: 1 GiB across the data dir, the archive written to longest ago removed first (an
    archived thread's archive stays readable until then)."""
    threads = data_dir / "threads"
    thread_ids = [start_thread(daemon, mcpServers={"fx": fixture_config()}) for _ in range(5)]
    first_ref = media_call(daemon, thread_ids[0])["projection"]["refs"][0]["ref"]
    per_thread = ARCHIVE_CAP_BYTES // (2 * MEDIA_BYTES)
    for index, thread_id in enumerate(thread_ids):
        for _ in range(per_thread - (1 if index == 0 else 0)):
            media_call(daemon, thread_id)
        if index == 0:
            daemon.request("thread/archive", {"threadId": thread_id})
            page = daemon.request("thread/context/read", {"threadId": thread_id, "ref": first_ref, "limit": 16})
            assert page["bytes"] == MEDIA_BYTES  # archiving a thread keeps its archive
        assert all_archives(threads) <= DATA_DIR_CAP_BYTES
    assert own_bytes(threads / f"{thread_ids[0]}.archive") == 0
    assert context_read_error(daemon, thread_ids[0], first_ref).reason == "unknownRef"
    assert all(own_bytes(threads / f"{t}.archive") > 0 for t in thread_ids[1:])
