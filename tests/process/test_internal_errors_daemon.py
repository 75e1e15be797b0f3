"""A failure no handler expects (here: the disk refuses a write) is answered ``internal``, logged with where it
happened and never with what the request carried, and the daemon keeps serving."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from testing.daemon_client import ROOT, DaemonError, JsonLinesClient

pytestmark = pytest.mark.daemon

FILE_SIZE_LIMIT = 2048
"""Bytes a file the daemon writes may reach: the store holds one small server, not one with a long env."""
SECRET = "sekrit-" + "x" * 4096


def _limit_file_size() -> None:
    """In the daemon's process: writes past the limit fail with ``EFBIG`` instead of raising ``SIGXFSZ``."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def test_an_unexpected_handler_failure_logs_a_traceback_without_secrets_and_answers_internal(data_dir: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "app_server", "--data-dir", str(data_dir), "--log-level", "info"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,  # a pipe: the file size limit does not apply to it
        cwd=ROOT,
        preexec_fn=_limit_file_size,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    try:
        client = JsonLinesClient(process.stdout, process.stdin)
        client.initialize()
        client.request("mcpServer/create", {"name": "small", "config": {"command": "true"}})
        big = {"command": "true", "env": {"API_TOKEN": SECRET}}
        refused = []
        for method in ("mcpServer/create", "mcpServer/update"):  # answered inline, and in a task of its own
            with pytest.raises(DaemonError) as err:
                client.request(method, {"name": "big" if method.endswith("create") else "small", "config": big})
            refused.append((err.value.code, err.value.reason))
        assert refused == [(-32603, "internal")] * 2
        listed = client.request("mcpServer/list")["data"]
        assert [(s["name"], s["config"].get("env")) for s in listed] == [("small", None)]
        process.stdin.close()
        stderr = process.stderr.read().decode()
        assert process.wait(15) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    failures = [json.loads(line) for line in stderr.splitlines() if '"handler_failed"' in line]
    assert sorted(failure["method"] for failure in failures) == ["mcpServer/create", "mcpServer/update"]
    for failure in failures:
        assert failure["exception"].startswith("Traceback (most recent call last):")
        assert "safe_fs.py" in failure["exception"] and failure["exception"].endswith("builtins.OSError")
    assert "sekrit" not in stderr
