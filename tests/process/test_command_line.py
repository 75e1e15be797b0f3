"""The daemon as a person meets it on a command line (SPEC §1): a terminal as stdin works on every event loop,
SIGHUP stops it like SIGTERM, a data dir it cannot use is one line and exit 2, and ``--help`` is plain text."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import ROOT

pytestmark = pytest.mark.daemon

unix_only = pytest.mark.skipif(sys.platform == "win32", reason="terminals (pty) and SIGHUP are POSIX")
INITIALIZE = b'{"id":1,"method":"initialize","params":{"clientInfo":{"name":"person","version":"0"}}}\n'
CTRL_D = b"\x04"


def _command(data_dir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "app_server", "--data-dir", str(data_dir), *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


class Terminal:
    """The daemon with a pseudo-terminal as its stdin and stdout: what a person typing into it sees."""

    def __init__(self, command: list[str], stderr: Path) -> None:
        import pty

        self.master, slave = pty.openpty()
        with stderr.open("wb") as log:
            self.process = subprocess.Popen(
                command, stdin=slave, stdout=slave, stderr=log, env=_env(), cwd=ROOT, start_new_session=True
            )
        os.close(slave)
        self._seen = b""

    def type(self, text: bytes) -> None:
        os.write(self.master, text)

    def answer(self, request_id: Any, timeout: float = 20.0) -> dict[str, Any]:
        """The response to ``request_id`` among the lines on the terminal (the echo of what was typed included)."""
        deadline = time.monotonic() + timeout
        while True:
            for line in self._seen.splitlines():
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if isinstance(message, dict) and message.get("id") == request_id and "method" not in message:
                    return message
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no answer to {request_id!r} on the terminal: {self._seen[-500:]!r}"
            if select.select([self.master], [], [], remaining)[0]:
                try:
                    self._seen += os.read(self.master, 1 << 16)
                except OSError:  # the daemon closed the terminal
                    raise AssertionError(f"the terminal closed before the answer to {request_id!r}") from None

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.master)


@contextmanager
def terminal(data_dir: Path, *args: str) -> Iterator[Terminal]:
    term = Terminal(_command(data_dir, *args), data_dir.with_suffix(".log"))
    try:
        yield term
    finally:
        term.close()


@unix_only
@pytest.mark.parametrize("event_loop", ["auto", "asyncio"])
def test_a_person_typing_into_a_terminal_gets_answers_and_ctrl_d_ends_it(data_dir: Path, event_loop: str) -> None:
    with terminal(data_dir, "--event-loop", event_loop) as term:
        term.type(INITIALIZE)
        assert term.answer(1)["result"]["serverInfo"]["name"] == "mcp-app-server"
        term.type(b'{"method":"initialized"}\n{"id":2,"method":"mcpServer/list"}\n')
        assert term.answer(2)["result"] == {"data": []}
        term.type(CTRL_D)
        assert term.process.wait(timeout=10) == 0
    assert '"event": "stopped"' in data_dir.with_suffix(".log").read_text()


@unix_only
@pytest.mark.parametrize("event_loop", ["auto", "asyncio"])
def test_a_terminal_is_served_after_start_up_too(data_dir: Path, event_loop: str) -> None:
    """The first line typed once the loop reads the terminal (not the start-up reader): the loop's own path."""
    with terminal(data_dir, "--event-loop", event_loop) as term:
        term.type(b"\n")  # a blank line: served at start-up; the loop takes over at the next unanswered line
        term.type(b'{"id":0,"method":"mcpServer/list"}\n')
        assert term.answer(0)["error"]["data"]["reason"] == "notInitialized"
        term.type(INITIALIZE)
        assert "methods" in term.answer(1)["result"]
        term.type(CTRL_D)
        assert term.process.wait(timeout=10) == 0


def _serving(data_dir: Path, *args: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        _command(data_dir, *args),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=data_dir.with_suffix(".log").open("wb"),
        env=_env(),
        cwd=ROOT,
    )
    assert process.stdin is not None and process.stdout is not None
    return process


@unix_only
@pytest.mark.parametrize("when", ["serving", "after a request"])
def test_sighup_stops_the_daemon_like_sigterm(data_dir: Path, when: str) -> None:
    process = _serving(data_dir)
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(INITIALIZE)
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1
        if when == "after a request":
            process.stdin.write(b'{"method":"initialized"}\n{"id":2,"method":"mcpServer/list"}\n')
            process.stdin.flush()
            assert json.loads(process.stdout.readline()) == {"jsonrpc": "2.0", "id": 2, "result": {"data": []}}
        process.send_signal(signal.SIGHUP)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()
        process.stdout.close()
    log = [json.loads(line) for line in data_dir.with_suffix(".log").read_text().splitlines()]
    assert [entry["event"] for entry in log if entry["event"] in ("signal_received", "stopped")] == [
        "signal_received",
        "stopped",
    ]


def _unusable_data_dirs(tmp_path: Path) -> list[tuple[Path, str]]:
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    cases = [(a_file / "data", "Not a directory")]
    if Path("/proc/self/fdinfo").is_dir():
        cases.append((Path("/proc/self/fdinfo"), "No such file or directory"))  # exists; nothing can be made there
    return cases


def test_a_data_dir_that_cannot_be_created_or_written_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for path, cause in _unusable_data_dirs(tmp_path):
        for stdin in (subprocess.DEVNULL, subprocess.PIPE):
            done = subprocess.run(
                _command(path), stdin=stdin, capture_output=True, env=_env(), cwd=ROOT, timeout=30, input=None
            )
            assert done.returncode == 2, done
            assert done.stdout == b""
            lines = done.stderr.decode().splitlines()
            assert lines == [f"mcp-app-server: cannot use the data dir {path}: {cause}"], lines


def test_help_is_plain_text() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "app_server", "--help"], capture_output=True, env=_env(), cwd=ROOT, timeout=30
    )
    assert done.returncode == 0
    text = done.stdout.decode()
    for option in ("--data-dir", "--listen", "--log-level", "--trace", "--transports", "--stdio-sandbox"):
        assert option in text
    assert "`" not in text and "``" not in text and ":class:" not in text
