"""A full data-dir disk loses no result (SPEC §5): on a small tmpfs filled to the last byte, every tool call whose
projection needs the archive still answers with its complete ``content``, the text cut to 16 KiB, no refs and
``archiveError: "storageFull"``; once there is room again, results are archived as before."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.daemon_client import DaemonError, running_daemon
from testing.fixtures import fixture_config
from testing.threads import call, start_thread

pytestmark = [pytest.mark.daemon, pytest.mark.skipif(sys.platform != "linux", reason="a tmpfs mount")]
CALLS = 100
TEXT = "x" * (64 * 1024)
PROJECTION_TEXT_BYTES = 16 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs of the test's own; skipped only when mounting is refused (not root, no mount namespace)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(mount)],
                             capture_output=True, text=True, check=False)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs for the data dir: {mounted.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(path: Path) -> int:
    """Write ``path`` until the disk has no byte left; the bytes it took."""
    written = 0
    with path.open("wb", buffering=0) as filler:
        for size in (1 << 16, 1 << 12, 1):
            try:
                while True:
                    written += filler.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
    return written


def test_every_call_answers_on_a_full_disk_and_archives_again_once_there_is_room(small_disk: Path) -> None:
    data_dir = small_disk  # the whole disk; the daemon's stderr log is beside it, on another one
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        thread_id = start_thread(daemon, mcpServers={"fx": fixture_config()})
        first = call(daemon, thread_id, "fx", "echo", {"text": TEXT})
        assert first["projection"]["refs"] and "archiveError" not in first["projection"]
        filler = small_disk / "filler"
        filled = _fill(filler)
        answered = []
        for _ in range(CALLS):
            result = call(daemon, thread_id, "fx", "echo", {"text": TEXT})
            projection = result["projection"]
            assert result["content"] == [{"type": "text", "text": TEXT}]
            assert projection["refs"] == [] and projection["truncated"] is True
            assert projection["archiveError"] == "storageFull"
            assert len(projection["text"].encode()) <= PROJECTION_TEXT_BYTES and "x" * 4096 in projection["text"]
            answered.append(result)
        print(f"disk full ({filled} bytes of filler): {len(answered)} of {CALLS} calls answered with their content")
        assert not [name for name in os.listdir(data_dir / "threads") if name.endswith(".tmp")]
        filler.unlink()
        again = call(daemon, thread_id, "fx", "echo", {"text": TEXT})
        assert again["projection"]["refs"] and "archiveError" not in again["projection"]
        ref = again["projection"]["refs"][0]["ref"]
        read = daemon.request("thread/context/read", {"threadId": thread_id, "ref": ref})
        assert read["bytes"] > len(TEXT) and "x" * 4096 in read["data"]


def test_a_store_write_on_a_full_disk_is_storage_full_and_changes_nothing(small_disk: Path) -> None:
    data_dir = small_disk
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        daemon.request("mcpServer/create", {"name": "kept", "config": fixture_config()})
        stored = (data_dir / "mcps.json").read_bytes()
        filler = data_dir / "filler"
        _fill(filler)
        with pytest.raises(DaemonError) as err:
            daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config()})
        assert (err.value.code, err.value.reason) == (-32013, "storageFull")
        assert err.value.data["path"].endswith("mcps.json")
        assert (data_dir / "mcps.json").read_bytes() == stored, "the store is as it was"
        filler.unlink()
        daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config()})
        assert [s["name"] for s in daemon.request("mcpServer/list")["data"]] == ["fx", "kept"]
