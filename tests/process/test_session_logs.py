"""Logs and the traffic trace a host developer debugs a report with (SPEC §1): the session's story at ``info``, one
line per request at ``debug``, every message in ``--trace FILE``, and no secret anywhere in either."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from scripts.smoke.fixtures.launch import oauth_fixture
from testing.daemon_client import ROOT, Daemon, DaemonError, running_daemon
from testing.fixtures import fixture_config
from testing.oauth import browse, stored_tokens

pytestmark = pytest.mark.daemon

SECRETS = {
    "env": "env-value-7d1f3a",
    "header": "header-value-5b9e2c",
    "imported": "imported-env-3c8a41",
    "broken": "broken-env-9f2d77",
}
HOST_SECRET = "host-env-secret-61ac0e"
"""In the daemon's own environment (a config may name it; its value never shows)."""


@pytest.fixture
def oauth_url() -> Iterator[str]:
    with oauth_fixture() as url:
        yield url


def _events(stderr: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stderr.splitlines() if line.strip()]


def _find(events: list[dict[str, Any]], event: str, **fields: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == event and all(e.get(k) == v for k, v in fields.items())]


def _pid_of(marker: str) -> int:
    """The pid of the fixture server started with ``--name marker`` (Linux ``/proc``)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"fixture_server.py" in b" ".join(argv) and marker.encode() in argv:
                return int(entry)
    raise AssertionError(f"no fixture server named {marker}")


def _ready(daemon: Daemon, name: str, thread_id: str | None = None) -> None:
    daemon.wait_notification(
        "mcpServer/startupStatus/updated",
        lambda p: p["name"] == name and p["threadId"] == thread_id and p["status"] == "ready",
        timeout=60,
    )


def _session(daemon: Daemon, home: Path, oauth_url: str) -> list[str]:
    """A host's session with failures: a ready server, one not found, one unreachable, a crash and its restart,
    a thread with a tool call, a login, an import and a sync; returns the authorization URL it was given."""
    daemon.initialize()
    fixture = fixture_config("--name", "crashme", env={"API_TOKEN": SECRETS["env"]})
    daemon.request("mcpServer/create", {"name": "fx", "config": fixture})
    broken = {"command": "/nonexistent/mcp-server", "env": {"PASSWORD": SECRETS["broken"]}}
    daemon.request("mcpServer/create", {"name": "broken", "config": broken})
    web = {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X-Title": SECRETS["header"]}}
    daemon.request("mcpServer/create", {"name": "web", "config": web})
    daemon.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": oauth_url, "oauth": {}}})
    _ready(daemon, "fx")  # created enabled: started by its creation
    for name in ("broken", "web"):
        with pytest.raises(DaemonError) as failed:
            daemon.request("mcpServer/start", {"name": name}, timeout=60)
        assert failed.value.reason == "startupFailed"
    os.kill(_pid_of("crashme"), signal.SIGKILL)  # a crash: restarted with backoff
    _ready(daemon, "fx")
    thread = {"name": "t", "mcpServers": {"fx2": fixture_config()}}
    thread_id = daemon.request("thread/start", thread)["thread"]["id"]
    call = {"threadId": thread_id, "server": "fx2", "tool": "echo", "arguments": {"text": "hello"}}
    assert daemon.request("mcpServer/tool/call", call, timeout=60)["content"][0]["text"] == "hello"
    daemon.request("thread/archive", {"threadId": thread_id})
    started = daemon.request("mcpServer/oauth/login", {"name": "sec"}, timeout=60)
    assert browse(started["authorizationUrl"]).status_code == 200
    done = daemon.wait_notification("mcpServer/oauthLogin/completed", timeout=60)
    assert done["success"] is True
    claude = {"mcpServers": {"imp": {"command": "tool", "env": {"TOKEN": SECRETS["imported"]}}}}
    (home / ".claude.json").write_text(json.dumps(claude))
    assert daemon.request("mcpServer/importFromApp", {"app": "claude"})["imported"] == ["imp"]
    daemon.request("mcpServer/syncAllToLive", {"apps": ["codex"], "dryRun": True})
    daemon.request("mcpServer/stop", {"name": "fx"})
    return [started["authorizationUrl"]]


def _secrets(data_dir: Path, authorization_urls: list[str]) -> list[str]:
    """Every value that must never be written: config env and header values, the daemon's own secret, the
    authorization URL (and its state and challenge), the stored tokens."""
    found = [*SECRETS.values(), HOST_SECRET, *stored_tokens(data_dir)]
    for url in authorization_urls:
        found.append(url)
        found += [value for key, value in parse_qsl(urlsplit(url).query) if key in ("state", "code_challenge")]
    return found


@pytest.mark.skipif(sys.platform != "linux", reason="finds the server to crash in /proc")
def test_a_session_with_failures_tells_its_story_at_info_and_traces_it_without_secrets(
    data_dir: Path, tmp_path: Path, oauth_url: str
) -> None:
    home, trace = tmp_path / "home", tmp_path / "trace.jsonl"
    home.mkdir()
    env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex"), "HOST_SECRET": HOST_SECRET}
    with running_daemon(data_dir, env=env, args=("--log-level", "info", "--trace", str(trace))) as daemon:
        urls = _session(daemon, home, oauth_url)
    stderr = daemon.stderr()
    events = _events(stderr)

    assert _find(events, "serving", trace=str(trace))
    assert events[-1]["event"] == "stopped"
    ready = _find(events, "server_ready", server="fx", owner="management")
    assert len(ready) == 2 and all(isinstance(e["duration_ms"], int) for e in ready)  # started, then restarted
    for name in ("broken", "web"):  # created enabled, each failed at its own start and at the host's
        failed = _find(events, "server_failed", server=name, owner="management")[-1]
        assert failed["reason"] == "startupFailed" and isinstance(failed["duration_ms"], int)
        assert failed["level"] == "warning" and failed["message"], failed  # why, in the log a host keeps
    broken = _find(events, "server_failed", server="broken", owner="management")[-1]
    assert broken["data"]["detail"] == "commandNotFound" and broken["data"]["command"] == "/nonexistent/mcp-server"
    [lost] = _find(events, "server_connection_lost", server="fx")
    [restart] = _find(events, "server_restart_scheduled", server="fx", attempt=1)
    assert 0 < restart["backoff_s"] <= 1.0
    assert events.index(lost) < events.index(restart) < events.index(ready[1])
    [thread] = _find(events, "thread_started", servers=["broken", "fx", "fx2", "sec", "web"])
    assert _find(events, "server_ready", server="fx2", owner="thread", thread_id=thread["thread_id"])
    assert _find(events, "thread_archived", thread_id=thread["thread_id"])
    assert _find(events, "oauth_login_started", server="sec") and _find(events, "oauth_login_completed", server="sec")
    assert _find(events, "import_summary", app="claude", imported=1, skipped=0)
    assert _find(events, "sync_summary", app="codex", dry_run=True)
    assert _find(events, "server_stopped", server="fx", owner="management")
    assert not _find(events, "request"), "per-request lines belong to debug"

    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert stat.S_IMODE(trace.stat().st_mode) == 0o600
    assert all(set(r) == {"time", "dir", "connection", "message"} for r in records)
    incoming = [r["message"] for r in records if r["dir"] == "in"]
    outgoing = [r["message"] for r in records if r["dir"] == "out"]
    requests = {m["id"]: m["method"] for m in incoming if "id" in m and "method" in m}
    answered = {m["id"] for m in outgoing if "id" in m and "method" not in m}
    assert requests and set(requests) <= answered, "every request in and its answer out"
    assert {"initialize", "mcpServer/create", "mcpServer/oauth/login", "thread/archive"} <= set(requests.values())
    assert any(m.get("method") == "mcpServer/startupStatus/updated" for m in outgoing), "notifications too"
    created = [m["params"]["config"] for m in incoming if m.get("method") == "mcpServer/create"]
    assert {"API_TOKEN": "***"} in [c.get("env") for c in created]
    assert {"X-Title": "***"} in [c.get("headers") for c in created]
    [login] = [m for m in outgoing if m.get("id") in requests and requests[m["id"]] == "mcpServer/oauth/login"]
    assert login["result"]["authorizationUrl"] == "***"

    written = stderr + trace.read_text()
    for secret in _secrets(data_dir, urls):
        assert secret not in written, f"a secret was written: {secret[:12]}..."


def test_debug_adds_one_line_per_request_without_arguments_or_results(data_dir: Path) -> None:
    argument = "argument-text-4e6f1d"
    with running_daemon(data_dir, args=("--log-level", "debug")) as daemon:
        daemon.initialize()
        daemon.request("mcpServer/create", {"name": "fx", "config": fixture_config(env={"K": SECRETS["env"]})})
        thread = daemon.request("thread/start", {"mcpServers": {"fx": fixture_config(env={"K": SECRETS["env"]})}})[
            "thread"
        ]["id"]
        call = {"threadId": thread, "server": "fx", "tool": "echo", "arguments": {"text": argument}}
        assert daemon.request("mcpServer/tool/call", call, timeout=60)["content"][0]["text"] == argument
        with pytest.raises(DaemonError):
            daemon.request("mcpServer/start", {"name": "missing"})
        with pytest.raises(DaemonError):
            daemon.request("no/such/method")
        daemon.send_raw(b'{"id":"last","method":"mcpServer/list"}\n')
        daemon.wait_response("last")
    lines = _find(_events(daemon.stderr()), "request")
    assert [e["method"] for e in lines] == [
        "initialize", "mcpServer/create", "thread/start", "mcpServer/tool/call", "mcpServer/start",
        "no/such/method", "mcpServer/list",
    ]  # fmt: skip
    assert [e["outcome"] for e in lines] == ["ok", "ok", "ok", "ok", "unknownServer", "methodNotFound", "ok"]
    assert all(e["bytes"] > 0 and e["ms"] >= 0 and e["connection"] == "stdio" for e in lines)
    assert lines[-1]["id"] == "last"
    stderr = daemon.stderr()
    assert argument not in stderr and SECRETS["env"] not in stderr


def test_an_unwritable_trace_file_is_one_line_and_exit_2(data_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "no-such-folder" / "trace.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "app_server", "--data-dir", str(data_dir), "--trace", str(target)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        f"mcp-app-server: cannot write the trace file {target}: No such file or directory"
    ]


def test_the_trace_is_bounded_and_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unit: past its size the trace becomes FILE.1 and starts again (two files at most); secrets go in no form."""
    from app_server.wire import trace as trace_module

    monkeypatch.setattr(trace_module, "FILE_MAX", 64 << 10)
    path = tmp_path / "trace.jsonl"
    trace = trace_module.Trace(path)
    create = {"jsonrpc": "2.0", "id": 1, "method": "mcpServer/create", "params": {"name": "s", "config": {
        "type": "http", "url": "https://x.example/mcp", "headers": {"X-Api": "h-secret"},
        "oauth": {"clientSecret": "c-secret", "clientId": "app"}}}}  # fmt: skip
    login = {"jsonrpc": "2.0", "id": 2, "result": {"authorizationUrl": "https://as.example/authorize?state=st-secret",
                                                    "loginId": "l1"}}  # fmt: skip
    ask = {"jsonrpc": "2.0", "id": "srv-1", "method": "mcpServer/elicitation/request",
           "params": {"mode": "url", "url": "https://as.example/?code=u-secret", "message": "sign in"}}  # fmt: skip
    typed = {"password": "f-secret", "name": "f-secret2"}
    answer = {"jsonrpc": "2.0", "id": "srv-2", "result": {"action": "accept", "content": typed}}
    tools = {"jsonrpc": "2.0", "id": 3, "result": {"tools": {"get_token": {"name": "get_token"}}}}
    for _ in range(200):
        trace.incoming("stdio", create, 300)
        trace.outgoing("stdio", json.dumps(login).encode() + b"\n")
        trace.outgoing("stdio", json.dumps(ask).encode() + b"\n")
        trace.incoming("stdio", answer, 200)
        trace.outgoing("stdio", json.dumps(tools).encode() + b"\n")
    big = b'{"jsonrpc":"2.0","id":"big","result":{"text":"' + b"x" * (128 << 10) + b'"}}\n'
    trace.outgoing("stdio", big)
    trace.close()
    rotated = path.with_name("trace.jsonl.1")
    assert rotated.exists() and path.stat().st_size <= 64 << 10 and rotated.stat().st_size <= 64 << 10
    assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE(rotated.stat().st_mode) == 0o600
    text = path.read_text() + rotated.read_text()
    for secret in ("h-secret", "c-secret", "st-secret", "u-secret", "f-secret"):
        assert secret not in text
    last = json.loads(path.read_text().splitlines()[-1])["message"]
    assert last == {"bytes": len(big), "omitted": "larger than 65536 bytes", "id": "big"}
    assert '"get_token":{"name":"get_token"}' in text, "a name-keyed map is walked, not taken for a secret"
