"""File descriptors (SPEC §5 Limits): a GUI app starts its sidecar with a low soft limit (macOS: 256); the daemon
raises it to the hard limit, so many threads' stdio servers fit, and gives its servers the limit it was started
with (Node raises its own again, so a Python server shows it). A start that still finds no descriptor fails typed
(``startupFailed``, ``tooManyOpenFiles``) and the daemon keeps serving."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from testing.daemon_client import DaemonError, descriptor_limit, running_daemon
from testing.fixtures import everything_config, fixture_config
from testing.process_tree import children
from testing.threads import START_TIMEOUT, call, start_thread

pytestmark = [pytest.mark.daemon, pytest.mark.skipif(sys.platform != "linux", reason="reads limits from /proc")]
SERVERS = 3


def _soft_limit(pid: int) -> int:
    line = next(x for x in Path(f"/proc/{pid}/limits").read_text().splitlines() if x.startswith("Max open files"))
    return int(line.split()[3])


def test_a_low_soft_limit_is_raised_and_the_servers_get_theirs_back(data_dir: Path) -> None:
    """Soft 64: eight threads of three stdio servers hold far more than 64 descriptors in the daemon."""
    with running_daemon(data_dir, prefix=descriptor_limit(64, 4096)) as daemon:
        daemon.initialize()
        daemon.request("mcpServer/list")  # answered by the event loop, which runs once the limit is raised
        assert daemon.process.pid is not None and _soft_limit(daemon.process.pid) == 4096
        names = [f"ev{i}" for i in range(SERVERS)]
        for name in names:
            daemon.request("mcpServer/create", {"name": name, "config": everything_config()})
        threads = [start_thread(daemon, servers=names) for _ in range(8)]
        for thread_id in threads:
            for name in names:
                answer = call(daemon, thread_id, name, "echo", {"message": "hi"})
                assert "hi" in answer["content"][0]["text"]
        for name in names:  # a server created enabled starts in the management connection too
            daemon.wait_notification(
                "mcpServer/startupStatus/updated",
                lambda p, name=name: p["name"] == name and p["threadId"] is None and p["status"] == "ready",
                timeout=60,
            )
        servers = [pid for pid, cmd in children(daemon.process.pid).items() if "server-everything" in cmd]
        assert len(servers) == (8 + 1) * SERVERS
        daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config()})
        call(daemon, start_thread(daemon, servers=["fx"]), "fx", "echo", {"text": "x"})
        fixtures = [pid for pid, cmd in children(daemon.process.pid).items() if "fixture_server" in cmd]
        assert fixtures and all(_soft_limit(pid) == 64 for pid in fixtures), "servers start with the daemon's limit"


def test_a_start_that_finds_no_descriptor_fails_typed_and_the_daemon_keeps_serving(data_dir: Path) -> None:
    """Hard 128 too: nothing to raise. Starts fail once the descriptors are gone, the daemon's (each stdio server
    holds a few) or the server's own (it inherits the 128 and Node opens modules many at once): both read as
    ``tooManyOpenFiles``; archiving threads frees them."""
    with running_daemon(data_dir, prefix=descriptor_limit(128, 128)) as daemon:
        daemon.initialize()
        daemon.request("mcpServer/create", {"name": "ev", "config": everything_config()})
        failures: list[DaemonError] = []
        threads = []
        for _ in range(64):
            thread_id = start_thread(daemon, servers=["ev"])
            threads.append(thread_id)
            try:
                call(daemon, thread_id, "ev", "echo", {"message": "hi"})
            except DaemonError as error:
                failures.append(error)
                break
        assert failures, "128 descriptors held 64 stdio servers"
        [failure] = failures
        assert failure.reason == "startupFailed", failure
        assert failure.data.get("detail") == "tooManyOpenFiles", failure.data
        rows = daemon.request("mcpServerStatus/list", {"threadId": threads[-1]})["data"]
        assert rows[0]["lastError"]["reason"] == "startupFailed"
        assert rows[0]["lastError"]["data"]["detail"] == "tooManyOpenFiles", "the row keeps what the answer said"
        for thread_id in threads[:-1]:
            daemon.request("thread/archive", {"threadId": thread_id}, timeout=START_TIMEOUT)
        fresh = start_thread(daemon, servers=["ev"])
        assert "hi" in call(daemon, fresh, "ev", "echo", {"message": "hi"})["content"][0]["text"]
