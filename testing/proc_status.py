"""What tests read of a daemon process from Linux's ``/proc``, and how they end one they spawned themselves."""

from __future__ import annotations

import subprocess
from pathlib import Path


def memory_kib(pid: int) -> tuple[int, int]:
    """(current, peak) resident set size in KiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def rss_bytes(pid: int) -> int:
    return memory_kib(pid)[0] * 1024


def end(process: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    """Close its stdin (EOF ends the daemon) and wait; kill it if it has not ended by then."""
    if process.stdin is not None:
        process.stdin.close()
    try:
        process.wait(timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
