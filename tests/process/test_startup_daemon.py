"""The start-up path driven as a host drives it: ``initialize`` answered before the event loop runs
(``app_server.process.startup``), and the hand-over to the processor, which must leave every answer as it would
have been."""

from __future__ import annotations

import importlib.util
import json
import os
import pty
import select
import signal
import subprocess
import sys
import tty
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import Daemon, DaemonError, running_daemon
from testing.fixtures import fixture_config

pytestmark = pytest.mark.daemon

ROOT = Path(__file__).resolve().parents[2]
CLIENT = {"clientInfo": {"name": "tests", "version": "0"}}


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False).encode() + b"\n"


def _request(request_id: Any, method: str, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return _line(message)


INITIALIZED = b'{"jsonrpc":"2.0","method":"initialized"}\n'


def _answers(daemon: Daemon, count: int) -> list[dict[str, Any]]:
    """The next ``count`` responses, in the order they arrived."""
    return [daemon.wait_for(lambda m: "id" in m and "method" not in m) for _ in range(count)]


@contextmanager
def _raw_daemon(data_dir: Path, stderr: int = subprocess.DEVNULL) -> Iterator[subprocess.Popen[bytes]]:
    """The daemon with its stdout read as bytes, line by line."""
    process = subprocess.Popen(
        [sys.executable, "-m", "app_server", "--data-dir", str(data_dir), "--log-level", "info"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def _exchange(process: subprocess.Popen[bytes], data: bytes) -> bytes:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(data)
    process.stdin.flush()
    return process.stdout.readline()


@pytest.mark.parametrize("event_loop", ["auto", "asyncio"])
def test_a_host_session_from_spawn_to_a_tool_call(data_dir: Path, event_loop: str) -> None:
    with running_daemon(data_dir, args=("--event-loop", event_loop)) as daemon:
        assert daemon.initialize()["dataDir"] == str(data_dir)
        assert daemon.request("mcpServer/list") == {"data": []}
        daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config()})
        assert [server["name"] for server in daemon.request("mcpServer/list")["data"]] == ["fx"]
        thread = daemon.request("thread/start", {"name": "t", "mcpServers": {"fx": fixture_config()}})["thread"]
        call = {"threadId": thread["id"], "server": "fx", "tool": "echo", "arguments": {"text": "early"}}
        assert daemon.request("mcpServer/tool/call", call, timeout=60)["content"][0]["text"] == "early"
        serving = next(json.loads(line) for line in daemon.stderr().splitlines() if '"serving"' in line)
        expected = "uvloop" if event_loop == "auto" and importlib.util.find_spec("uvloop") else "asyncio"
        assert serving["event_loop"] == expected


def test_a_request_before_initialize_is_refused_then_the_handshake_goes_on(data_dir: Path) -> None:
    with running_daemon(data_dir) as daemon:
        with pytest.raises(DaemonError) as refused:
            daemon.request("mcpServer/list")
        assert refused.value.reason == "notInitialized"
        daemon.initialize()
        assert daemon.request("mcpServer/list") == {"data": []}


def test_a_second_initialize_is_refused_and_the_first_ones_opt_outs_hold(data_dir: Path) -> None:
    with running_daemon(data_dir) as daemon:
        daemon.initialize(optOutNotificationMethods=["mcpServer/startupStatus/updated"])
        with pytest.raises(DaemonError) as refused:
            daemon.request("initialize", CLIENT)
        assert refused.value.reason == "alreadyInitialized"
        daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config()})
        daemon.request("mcpServer/start", {"name": "fx"}, timeout=60)
        assert daemon.notifications("mcpServer/startupStatus/updated") == []


def test_a_malformed_line_right_after_initialize_gets_a_parse_error(data_dir: Path) -> None:
    with running_daemon(data_dir) as daemon:
        daemon.send_raw(_request(1, "initialize", CLIENT) + b'{"id": 2, "method": \n' + INITIALIZED)
        initialize, parse_error = _answers(daemon, 2)
        assert initialize["id"] == 1 and "result" in initialize
        assert parse_error["id"] is None and parse_error["error"]["code"] == -32700
        assert daemon.request("mcpServer/list") == {"data": []}


def test_lines_written_at_once_are_all_answered_in_order(data_dir: Path) -> None:
    with running_daemon(data_dir) as daemon:
        create = {"name": "fx", "config": fixture_config()}
        daemon.send_raw(
            _request(1, "initialize", CLIENT) + INITIALIZED + _request(2, "mcpServer/list")
            + _request(3, "mcpServer/create", create)
        )
        answers = _answers(daemon, 3)
        assert [answer["id"] for answer in answers] == [1, 2, 3]
        assert [("result" in answer) for answer in answers] == [True, True, True]
        assert answers[1]["result"] == {"data": []}
        assert [server["name"] for server in daemon.request("mcpServer/list")["data"]] == ["fx"]


def test_end_of_input_right_after_initialize_exits_0(data_dir: Path) -> None:
    with _raw_daemon(data_dir) as process:
        assert json.loads(_exchange(process, _request(1, "initialize", CLIENT)))["id"] == 1
        assert process.stdin is not None and process.stdout is not None
        process.stdin.close()
        assert process.wait(15) == 0
        assert process.stdout.read() == b""


def test_end_of_input_before_any_line_exits_0(data_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "app_server", "--data-dir", str(data_dir)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=30,
    )
    assert (done.returncode, done.stdout) == (0, b"")


def test_sigterm_right_after_initialize_exits_0(data_dir: Path) -> None:
    with _raw_daemon(data_dir) as process:
        assert json.loads(_exchange(process, _request(1, "initialize", CLIENT)))["id"] == 1
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0


def _answered_early(stderr: bytes) -> bool:
    serving = next(json.loads(line) for line in stderr.splitlines() if b'"serving"' in line)
    return bool(serving["initialize_answered_early"])


def test_initialize_answered_early_is_the_bytes_the_processor_writes(data_dir: Path) -> None:
    """The same session twice: answered by the start-up reader, then with a first line that it leaves to the
    processor, so the processor answers everything."""
    initialize = _request("ïd", "initialize", {"clientInfo": {"name": "Ünï \u2028 app", "version": "1"}})
    ignored = b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":9}}\n'
    answers, early = [], []
    for first in (b"", ignored):
        with _raw_daemon(data_dir, stderr=subprocess.PIPE) as process:
            answers.append(_exchange(process, first + initialize))
            assert process.stdin is not None and process.stderr is not None
            process.stdin.close()
            early.append(_answered_early(process.stderr.read()))
    assert early == [True, False]
    assert answers[0] == answers[1]
    assert json.loads(answers[0])["result"]["userAgent"] == "mcp-app-server/0.1.0 (Ünï \u2028 app/1)"


def test_autostart_follows_an_initialized_sent_with_initialize(data_dir: Path) -> None:
    with running_daemon(data_dir) as first:
        first.initialize()
        first.request("mcpServer/create", {"name": "on", "config": fixture_config()})
    with running_daemon(data_dir) as second:
        second.send_raw(_request(1, "initialize", CLIENT) + INITIALIZED + _request(2, "mcpServer/list"))
        assert [answer["id"] for answer in _answers(second, 2)] == [1, 2]
        ready = second.wait_notification("mcpServer/startupStatus/updated", lambda p: p["status"] == "ready", 60)
        assert ready["name"] == "on"


def _terminal_output(run: Callable[[int], None]) -> bytes:
    """What ``run`` wrote to a pseudo-terminal given as its stdout (a character device, not a pipe)."""
    main, side = pty.openpty()
    try:
        tty.setraw(side)  # no newline translation
        run(side)
        os.close(side)
        side = -1
        chunks = []
        while True:
            try:
                chunk = os.read(main, 1 << 16)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(main)
        if side >= 0:
            os.close(side)


@pytest.mark.parametrize("event_loop", ["auto", "asyncio"])
def test_a_terminal_as_stdio_is_served_and_sigterm_ends_it(data_dir: Path, event_loop: str) -> None:
    """A terminal is watched by the loop: a read blocked in a worker thread would hold the process at exit."""
    main, side = pty.openpty()
    tty.setraw(side)
    process = subprocess.Popen(
        [sys.executable, "-m", "app_server", "--data-dir", str(data_dir), "--event-loop", event_loop],
        stdin=side,
        stdout=side,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        # thread/list is answered by the processor, not the early reader: the loop reads the terminal by then.
        os.write(main, _request(1, "initialize", CLIENT) + INITIALIZED + _request(2, "thread/list"))
        received = b""
        while received.count(b"\n") < 2:
            readable, _, _ = select.select([main], [], [], 30)
            assert readable, f"no answer: {received!r}"
            received += os.read(main, 1 << 16)
        assert [json.loads(line)["id"] for line in received.splitlines()] == [1, 2]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(main)
        os.close(side)


@pytest.mark.parametrize("event_loop", ["auto", "asyncio"])
@pytest.mark.parametrize("stdout", ["pipe", "file", "terminal"])
def test_a_file_as_stdin_is_served_to_its_end(data_dir: Path, tmp_path: Path, stdout: str, event_loop: str) -> None:
    """stdin (and stdout) need not be pipes; neither event loop may watch a file (uvloop would abort on one)."""
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(
        _request(1, "initialize", CLIENT) + INITIALIZED + _request(2, "mcpServer/list")
        + _request(3, "mcpServer/create", {"name": "fx", "config": fixture_config()}) + _request(4, "thread/list")
    )
    output = tmp_path / "answers.jsonl"
    returncodes = []

    def run(out: int | None) -> None:
        with requests.open("rb") as stdin:
            done = subprocess.run(
                [sys.executable, "-m", "app_server", "--data-dir", str(data_dir), "--event-loop", event_loop],
                stdin=stdin,
                stdout=subprocess.PIPE if out is None else out,
                stderr=subprocess.DEVNULL,
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                timeout=60,
            )
        returncodes.append(done.returncode)
        if out is None:
            output.write_bytes(done.stdout)

    if stdout == "pipe":
        run(None)
    elif stdout == "file":
        with output.open("wb") as out:
            run(out.fileno())
    else:
        output.write_bytes(_terminal_output(run))
    assert returncodes == [0]
    answers = [json.loads(line) for line in output.read_bytes().splitlines() if line.strip()]
    assert sorted(answer["id"] for answer in answers) == [1, 2, 3, 4]
    assert all("result" in answer for answer in answers)


STARTUP = "mcpServer/startupStatus/updated"


def _store_of(data_dir: Path, names: list[str]) -> None:
    with running_daemon(data_dir) as first:
        first.initialize()
        for name in names:
            first.request("mcpServer/create", {"name": name, "config": fixture_config(description=f"server {name}")})


def test_the_first_list_of_a_populated_store_is_answered_before_autostart_begins(data_dir: Path) -> None:
    names = ["a", "b", "c", "d"]
    _store_of(data_dir, names)
    with running_daemon(data_dir) as daemon:
        daemon.request("initialize", CLIENT)
        daemon.send_raw(INITIALIZED + _request("first", "mcpServer/list"))
        first = daemon.wait_for(lambda m: m.get("id") == "first" or m.get("method") == STARTUP, consume=False)
        assert first.get("id") == "first", "autostart began before the host's first answer"
        assert [server["name"] for server in daemon.wait_response("first")["result"]["data"]] == names
        for name in names:
            daemon.wait_notification(STARTUP, lambda p, n=name: (p["name"], p["status"]) == (n, "ready"), timeout=90)


def test_autostart_begins_when_the_host_asks_nothing_after_initialized(data_dir: Path) -> None:
    _store_of(data_dir, ["quiet"])
    with running_daemon(data_dir) as daemon:
        daemon.initialize()
        ready = daemon.wait_notification(STARTUP, lambda p: p["status"] == "ready", timeout=60)
        assert ready["name"] == "quiet"


def test_a_first_request_that_loads_the_runtime_logs_json_on_stderr_only(data_dir: Path) -> None:
    """Logging is set up once start-up's loading begins; a first request that loads (and logs from) the runtime
    before that still leaves stdout to the protocol (the client checks every line) and stderr to JSON lines."""
    with running_daemon(data_dir) as daemon:
        daemon.request("initialize", CLIENT)
        thread = {"mcpServers": {"gone": {"command": "no-such-cmd"}}}
        daemon.send_raw(INITIALIZED + _request("t", "thread/start", thread))
        assert "thread" in daemon.wait_response("t", timeout=60)["result"]
        daemon.wait_notification(STARTUP, lambda p: p["status"] == "failed", timeout=60)
    lines = [line for line in daemon.stderr().splitlines() if line.strip()]
    assert [json.loads(line)["event"] for line in lines].count("serving") == 1
