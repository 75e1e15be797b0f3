"""A client that stops reading costs the daemon bounded memory: results wait (in flight) for it to read, new
requests get ``overloaded``, notifications are dropped past 8 MiB, and no response is ever lost."""

from __future__ import annotations

import array
import fcntl
import json
import os
import stat
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

from testing.daemon_client import ROOT, JsonLinesClient
from testing.fixtures import fixture_config
from testing.proc_status import end, memory_kib

pytestmark = [
    pytest.mark.daemon,
    pytest.mark.skipif(sys.platform != "linux", reason="reads RSS from /proc and pipe fill via FIONREAD"),
]
MIB = 1 << 20
KIB = 1 << 10


class PausableLines:
    """The daemon's stdout as lines, read only while ``reading`` is set (a client that stops reading)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self.reading = threading.Event()
        self.reading.set()

    def __iter__(self) -> Iterator[bytes]:
        while True:
            self.reading.wait()
            line = self._stream.readline()
            if not line:
                return
            yield line


@contextmanager
def pausable_daemon(
    data_dir: Path, event_loop: str = "auto"
) -> Iterator[tuple[subprocess.Popen[bytes], JsonLinesClient, PausableLines]]:
    """The daemon on stdio with a client whose reading can be paused; its log goes to ``<data_dir>.log``."""
    process = subprocess.Popen(
        [sys.executable, "-m", "app_server", "--data-dir", str(data_dir), "--event-loop", event_loop],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=data_dir.with_suffix(".log").open("wb"),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    assert process.stdin is not None and process.stdout is not None
    lines = PausableLines(process.stdout)
    client = JsonLinesClient(lines, process.stdin)  # type: ignore[arg-type]
    try:
        yield process, client, lines
    finally:
        lines.reading.set()
        end(process)


def _wait_input_consumed(process: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    """Until the daemon has read every byte written to its stdin (the pipe holds none)."""
    assert process.stdin is not None
    deadline = time.monotonic() + timeout
    pending = array.array("i", [0])
    while True:
        fcntl.ioctl(process.stdin.fileno(), termios.FIONREAD, pending, True)
        if pending[0] == 0:
            return
        assert time.monotonic() < deadline, f"{pending[0]} bytes still unread by the daemon"
        time.sleep(0.05)


def _thread_with_fixture(client: JsonLinesClient) -> str:
    client.initialize()
    thread_id: str = client.request("thread/start", {"name": "bp", "mcpServers": {"fx": fixture_config()}})[
        "thread"
    ]["id"]
    echoed = _call(client, thread_id, "echo", {"text": "ready"}, timeout=60)
    assert echoed["content"][0]["text"] == "ready"
    return thread_id


def _call(client: JsonLinesClient, thread_id: str, tool: str, arguments: dict, timeout: float = 30) -> dict:
    params = {"threadId": thread_id, "server": "fx", "tool": tool, "arguments": arguments}
    return client.request("mcpServer/tool/call", params, timeout=timeout)


@pytest.mark.parametrize("event_loop", ["auto", "asyncio"])
def test_results_to_a_client_that_stops_reading_cost_bounded_memory(data_dir: Path, event_loop: str) -> None:
    with pausable_daemon(data_dir, event_loop) as (process, client, lines):
        thread_id = _thread_with_fixture(client)
        rss_before, _ = memory_kib(process.pid)
        text = "x" * (64 * KIB)
        count = 2000  # 128 MiB of results if the daemon buffered them all
        lines.reading.clear()
        ids = [
            client.start_request(
                "mcpServer/tool/call",
                {"threadId": thread_id, "server": "fx", "tool": "echo", "arguments": {"text": text}},
                request_id=f"c{i}",
            )
            for i in range(count)
        ]
        _wait_input_consumed(process)
        _, peak_unread = memory_kib(process.pid)
        lines.reading.set()
        answers = [client.wait_response(request_id, timeout=120) for request_id in ids]
        _, peak = memory_kib(process.pid)
        overloaded = [a for a in answers if "error" in a]
        assert all(a["error"]["data"]["reason"] == "overloaded" for a in overloaded)
        assert overloaded, "a client that does not read must be told to retry later"
        assert all(a["result"]["content"][0]["text"] == text for a in answers if "result" in a)
        assert (peak - rss_before) < 64 * 1024, f"RSS grew by {(peak - rss_before) // 1024} MiB"
        assert (peak_unread - rss_before) < 64 * 1024
        assert _call(client, thread_id, "echo", {"text": "after"})["content"][0]["text"] == "after"


def test_inline_responses_to_a_client_that_stops_reading_cost_bounded_memory(data_dir: Path) -> None:
    """Requests answered without a task switch (store reads) are refused past the backlog too."""
    with pausable_daemon(data_dir) as (process, client, lines):
        client.initialize()
        args = [f"--option-{i}-" + "v" * 100 for i in range(16)]
        for i in range(32):
            client.request("mcpServer/create", {"name": f"s{i}", "config": {"command": "tool", "args": args}})
        listing = client.request("mcpServer/list")
        assert len(listing["data"]) == 32
        rss_before, _ = memory_kib(process.pid)
        lines.reading.clear()
        count = 4000  # ~60 KiB per answer: 240 MiB if the daemon buffered them all
        client.send_raw(b"".join(b'{"id":%d,"method":"mcpServer/list"}\n' % i for i in range(count)))
        _wait_input_consumed(process)
        _, peak_unread = memory_kib(process.pid)
        lines.reading.set()
        answers = [client.wait_response(i, timeout=120) for i in range(count)]
        _, peak = memory_kib(process.pid)
        assert all(a.get("result") == listing or a["error"]["data"]["reason"] == "overloaded" for a in answers)
        assert any("error" in a for a in answers)
        assert (peak - rss_before) < 64 * 1024, f"RSS grew by {(peak - rss_before) // 1024} MiB"
        assert (peak_unread - rss_before) < 64 * 1024
        assert client.request("mcpServer/list") == listing


def _wait_logged(log: Path, event: str, timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while f'"event": "{event}"' not in log.read_text(errors="replace"):
        assert time.monotonic() < deadline, f"the daemon never logged {event}"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_progress_notifications_are_dropped_never_the_response(data_dir: Path) -> None:
    """Slow: the SDK fixture emits about 1,000 progress notifications a second."""
    with pausable_daemon(data_dir) as (process, client, lines):
        thread_id = _thread_with_fixture(client)
        rss_before, _ = memory_kib(process.pid)
        steps = 30_000  # ~6 MiB of progress notifications, more than the 4 MiB a non-reader is kept for them
        lines.reading.clear()
        arguments = {"steps": steps, "delay_ms": 0}
        params = {"threadId": thread_id, "server": "fx", "tool": "progress", "arguments": arguments}
        params["timeoutMs"] = 300_000
        call = client.start_request("mcpServer/tool/call", params)
        _wait_logged(data_dir.with_suffix(".log"), "notifications_dropped")
        lines.reading.set()
        response = client.wait_response(call, timeout=600)
        assert response.get("result", {}).get("content", [{}])[0].get("text") == f"done {steps}", response
        received = client.notifications("mcpServer/tool/progress")
        assert 0 < len(received) < steps
        _, peak = memory_kib(process.pid)
        assert (peak - rss_before) < 64 * 1024, f"RSS grew by {(peak - rss_before) // 1024} MiB"


BIG_TEXT = 2_040_000
"""``big`` answers its text twice (content and structuredContent): a response line of about 3.9 MiB."""
BIG_CALLS = 256
"""The soak's round (about 1 GiB of answers): ``-m slow``."""
GROWTH_WHILE_DEAF = 256 * MIB
RETURNED_WITHIN = 64 * MIB
QUICK_CALLS = 40
"""The default suite's round: about 156 MiB of answers, which must wait on disk, not in memory."""
QUICK_HELD_WHILE_DEAF = 64 * MIB
"""What the daemon may still hold once every answer waits for the deaf client."""
QUICK_PEAK_SHARE = 0.75
"""The peak while the answers come may not reach this share of their bytes: it is the answers being parsed and
encoded at once (it grows with the calls in flight), never all of them kept."""


def _spool_files(pid: int, data_dir: Path) -> list[os.stat_result]:
    """The daemon's open files in the data dir that have no name (its output spools)."""
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith(str(data_dir) + "/") and target.endswith(" (deleted)"):
                found.append(os.stat(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            continue
    return found


def _wait_spooled(process: subprocess.Popen[bytes], data_dir: Path, at_least: int, timeout: float = 300.0) -> None:
    """Until the answers waiting for the client have reached the spool on disk (all but what memory holds)."""
    deadline = time.monotonic() + timeout
    while sum(info.st_size for info in _spool_files(process.pid, data_dir)) < at_least:
        assert time.monotonic() < deadline, "the answers never reached the spool"
        time.sleep(0.1)


def _large_results_round(
    process: subprocess.Popen[bytes],
    client: JsonLinesClient,
    lines: PausableLines,
    thread_id: str,
    data_dir: Path,
    calls: int = BIG_CALLS,
) -> tuple[int, int, int, int]:
    """``calls`` calls answering ~3.9 MiB each while the client does not read, then it reads them all: (peak growth
    while it did not read, growth once every answer waited, RSS growth once it had read everything, the answers'
    bytes), in bytes."""
    rss_before, _ = memory_kib(process.pid)
    line_bytes = len(json.dumps(_call(client, thread_id, "big", {"bytes": BIG_TEXT}), separators=(",", ":")))
    lines.reading.clear()
    ids = [
        client.start_request(
            "mcpServer/tool/call",
            {"threadId": thread_id, "server": "fx", "tool": "big", "arguments": {"bytes": BIG_TEXT}},
            request_id=f"big-{i}",
        )
        for i in range(calls)
    ]
    _wait_input_consumed(process)
    _wait_spooled(process, data_dir, calls * line_bytes - 24 * MIB)
    rss_deaf, peak_deaf = memory_kib(process.pid)
    spools = _spool_files(process.pid, data_dir)
    assert spools and all(stat.S_IMODE(info.st_mode) == 0o600 for info in spools)
    assert not [p for p in data_dir.iterdir() if p.is_file() and p.stat().st_size > MIB], "a spool with a name"
    lines.reading.set()
    answers = [client.wait_response(request_id, timeout=300) for request_id in ids]
    assert all(len(a["result"]["content"][0]["text"]) == BIG_TEXT for a in answers), "every answer, whole"
    assert _call(client, thread_id, "echo", {"text": "after"})["content"][0]["text"] == "after"
    assert _spool_files(process.pid, data_dir) == [], "the spool outlived the output it held"
    rss_after, _ = memory_kib(process.pid)
    growth = (max(peak_deaf, rss_deaf) - rss_before) * KIB
    return growth, (rss_deaf - rss_before) * KIB, (rss_after - rss_before) * KIB, calls * line_bytes


@pytest.mark.parametrize("event_loop", ["auto", "asyncio"])
def test_large_results_wait_on_disk_for_a_client_that_stops_reading(data_dir: Path, event_loop: str) -> None:
    with pausable_daemon(data_dir, event_loop) as (process, client, lines):
        thread_id = _thread_with_fixture(client)
        peak, held, left_after, answered = _large_results_round(
            process, client, lines, thread_id, data_dir, QUICK_CALLS
        )
        assert held < QUICK_HELD_WHILE_DEAF, f"{held // MIB} MiB held while the client was deaf"
        assert peak < QUICK_PEAK_SHARE * answered, f"RSS peaked {peak // MIB} MiB up for {answered // MIB} MiB"
        assert left_after < RETURNED_WITHIN, f"RSS stayed {left_after // MIB} MiB above the start"


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("event_loop", ["auto", "asyncio"])
def test_large_results_to_a_client_that_stops_reading_cost_bounded_memory(data_dir: Path, event_loop: str) -> None:
    with pausable_daemon(data_dir, event_loop) as (process, client, lines):
        thread_id = _thread_with_fixture(client)
        deaf_growth, _, left_after, _ = _large_results_round(process, client, lines, thread_id, data_dir)
        assert deaf_growth < GROWTH_WHILE_DEAF, f"RSS grew by {deaf_growth // MIB} MiB while the client did not read"
        assert left_after < RETURNED_WITHIN, f"RSS stayed {left_after // MIB} MiB above the start"


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_large_results_to_a_deaf_client_round_after_round(data_dir: Path) -> None:
    """Soak: eight rounds of the above in one daemon; neither bound drifts."""
    with pausable_daemon(data_dir) as (process, client, lines):
        thread_id = _thread_with_fixture(client)
        start, _ = memory_kib(process.pid)
        for round_number in range(8):
            deaf_growth, *_ = _large_results_round(process, client, lines, thread_id, data_dir)
            now, _ = memory_kib(process.pid)
            assert deaf_growth < GROWTH_WHILE_DEAF, f"round {round_number}: +{deaf_growth // MIB} MiB while deaf"
            assert (now - start) * KIB < RETURNED_WITHIN, f"round {round_number}: {(now - start) // 1024} MiB held"


def test_the_last_status_of_a_server_reaches_a_client_that_reads_again(data_dir: Path) -> None:
    """A thread's server becomes ready while its client is not reading and the backlog drops notifications: once
    the client reads, the server's last status is among what it gets (kept per thread and server, never dropped)."""
    with pausable_daemon(data_dir) as (process, client, lines):
        thread_id = _thread_with_fixture(client)
        slow = client.request("thread/start", {"mcpServers": {"slow": fixture_config("--init-delay", "3")}})
        slow_id = slow["thread"]["id"]
        lines.reading.clear()
        params = {"threadId": thread_id, "server": "fx", "tool": "big", "arguments": {"bytes": BIG_TEXT}}
        ids = [client.start_request("mcpServer/tool/call", params, request_id=f"fill-{i}") for i in range(6)]
        _wait_input_consumed(process)
        _wait_logged(data_dir.with_suffix(".log"), "notifications_dropped")
        lines.reading.set()
        for request_id in ids:
            assert "result" in client.wait_response(request_id, timeout=120)
        ready = client.wait_notification(
            "mcpServer/startupStatus/updated",
            lambda p: p.get("threadId") == slow_id and p["name"] == "slow" and p["status"] in ("ready", "failed"),
            timeout=60,
        )
        assert ready["status"] == "ready", ready
