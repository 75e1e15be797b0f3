"""SessionSlot and McpClientManager against real fixture servers (subprocesses), stdio and HTTP."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_runtime import ConfigPolicy, McpClientManager, RuntimeSettings, Spawner, parse_server_config
from mcp_runtime.session.slot import SessionSlot
from protocol.base import WireModel
from protocol.config import McpServerConfig
from protocol.jsonrpc import AppError
from scripts.smoke.fixtures.launch import http_fixture
from testing.fixtures import NODE_MODULES, everything_config, fixture_config, script

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


_spawners: list[Spawner] = []


@pytest.fixture(autouse=True)
async def spawner() -> AsyncIterator[Spawner]:
    """The task group slots and owners spawn into (the daemon's, in production); cancelled after the test."""
    async with anyio.create_task_group() as tg:
        _spawners.append(Spawner(tg))
        yield _spawners[-1]
        _spawners.pop()
        tg.cancel_scope.cancel()


def new_slot(name: str, config: McpServerConfig, **kwargs: Any) -> SessionSlot:
    return SessionSlot(name, config, spawner=_spawners[-1], policy=ConfigPolicy(), **kwargs)


class Sink:
    """Collects published events; ``wait_for`` blocks (bounded) until a matching one arrives."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self._changed = anyio.Event()

    def __call__(self, method: str, params: WireModel) -> None:
        self.events.append((method, params.model_dump(mode="json")))
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, predicate: Callable[[str, dict[str, Any]], bool], timeout: float = 10) -> None:
        with anyio.fail_after(timeout):
            while not any(predicate(m, p) for m, p in self.events):
                await self._changed.wait()

    def of(self, method: str) -> list[dict[str, Any]]:
        return [p for m, p in self.events if m == method]


def config(raw: dict[str, Any], name: str = "fx") -> McpServerConfig:
    return parse_server_config(name, raw)


def stdio(*args: str, **extra: Any) -> McpServerConfig:
    return config(fixture_config(*args, startupTimeoutMs=20_000, **extra))


def script_config(name: str, *args: str, **extra: Any) -> McpServerConfig:
    command = script(name, *args)
    return config({"command": command[0], "args": command[1:], **extra})


async def start_error(cfg: McpServerConfig, env: dict[str, str] | None = None) -> AppError:
    connection = new_slot("fx", cfg, env=env if env is not None else dict(os.environ), sink=Sink())
    with pytest.raises(AppError) as info:
        await connection.start()
    await connection.close()
    return info.value


@pytest.mark.parametrize(
    ("protocol", "expected"), [("auto", "2026-07-28"), ("2025-11-25", "2025-11-25"), ("2026-07-28", "2026-07-28")]
)
async def test_stdio_catalog_and_calls(protocol: str, expected: str) -> None:
    sink = Sink()
    connection = new_slot("fx", stdio(protocol=protocol), env=dict(os.environ), sink=sink)
    state = await connection.start()
    try:
        assert state.status == "connected"
        assert state.protocol_version == expected
        assert state.server_info == {"name": "fixture", "version": "1.0.0"}
        names = {tool.name for tool in state.tools}
        assert {"echo", "add", "progress", "sleep", "change_tools"} <= names
        assert [p["name"] for p in state.prompts] == ["greet"]
        assert {r["uri"] for r in state.resources} == {"fixture://static/hello", "fixture://static/blob"}
        assert state.resource_templates[0]["uriTemplate"] == "fixture://item/{id}"

        result = await connection.call_tool("echo", {"text": "hi"}, timeout_s=10)
        assert result["content"] == [{"type": "text", "text": "hi"}]

        seen: list[tuple[float, float | None, str | None]] = []

        async def progress(value: float, total: float | None, message: str | None) -> None:
            seen.append((value, total, message))

        await connection.call_tool("progress", {"steps": 3, "delay_ms": 1}, timeout_s=10, progress=progress)
        assert [s[0] for s in seen] == [1, 2, 3]

        # structuredContent that violates its outputSchema comes back (the caller validates it).
        bad = await connection.call_tool("bad_output", {}, timeout_s=10)
        assert bad["structuredContent"] == {"count": "not-a-number"}

        failed = await connection.call_tool("fail", {"message": "nope"}, timeout_s=10)
        assert failed["isError"] is True

        started = time.monotonic()
        with pytest.raises(AppError) as info:
            await connection.call_tool("sleep", {"ms": 5000}, timeout_s=0.3)
        assert info.value.reason == "timeout"
        assert time.monotonic() - started < 3
        # The connection is still usable after the timeout.
        assert (await connection.call_tool("echo", {"text": "again"}, timeout_s=10))["content"][0]["text"] == "again"

        prompt = await connection.get_prompt("greet", {"name": "Ada"})
        assert prompt["messages"][0]["content"]["text"] == "Hello, Ada!"
        read = await connection.read_resource("fixture://static/hello")
        assert read["contents"][0]["text"] == "hello world"
    finally:
        await connection.close()
    assert connection.state.status == "notStarted"


@pytest.mark.parametrize("protocol", ["2025-11-25", "2026-07-28"])
async def test_list_changed_and_resource_updates(protocol: str) -> None:
    sink = Sink()
    connection = new_slot("fx", stdio(protocol=protocol), env=dict(os.environ), sink=sink)
    await connection.start()
    try:
        before = len(connection.tools)
        await connection.call_tool("change_tools", {}, timeout_s=10)
        await sink.wait_for(lambda m, p: m == "mcp:tools_updated")
        assert sink.of("mcp:tools_updated") == [{"server": "fx", "threadId": None}]
        assert len(connection.tools) == before + 1
        assert "dynamic_1" in {tool.name for tool in connection.tools}

        await connection.subscribe("fixture://static/hello")
        await connection.call_tool("touch_resource", {"uri": "fixture://static/hello"}, timeout_s=10)
        await sink.wait_for(lambda m, p: m == "mcp:resource_updated")
        assert sink.of("mcp:resource_updated")[0] == {
            "server": "fx",
            "uri": "fixture://static/hello",
            "threadId": None,
        }
        await connection.unsubscribe("fixture://static/hello")
    finally:
        await connection.close()


async def test_http_connect_and_call() -> None:
    with http_fixture() as url:
        cfg = config({"type": "http", "url": url, "startupTimeoutMs": 20_000})
        connection = new_slot("web", cfg, env={}, sink=Sink())
        state = await connection.start()
        try:
            assert state.status == "connected"
            assert "echo" in {tool.name for tool in state.tools}
            result = await connection.call_tool("echo", {"text": "over http"}, timeout_s=10)
            assert result["content"][0]["text"] == "over http"
            with pytest.raises(AppError) as info:
                await connection.call_tool("sleep", {"ms": 5000}, timeout_s=0.3)
            assert info.value.reason == "timeout"
        finally:
            await connection.close()


async def test_http_legacy_only_server_with_auto() -> None:
    with http_fixture("--legacy-only") as url:
        cfg = config({"type": "http", "url": url, "startupTimeoutMs": 20_000})
        connection = new_slot("web", cfg, env={}, sink=Sink())
        state = await connection.start()
        try:
            assert state.protocol_version == "2025-11-25"
            assert (await connection.call_tool("echo", {"text": "x"}, timeout_s=10))["content"][0]["text"] == "x"
        finally:
            await connection.close()


async def test_http_missing_env_var_fails_before_network() -> None:
    # Port 9 (discard) on loopback: a connection attempt would fail differently; missingEnvVar comes first.
    cfg = config({"type": "http", "url": "http://127.0.0.1:9/mcp", "bearerTokenEnvVar": "FX_TOKEN_UNSET"})
    error = await start_error(cfg, env={})
    assert error.reason == "missingEnvVar"
    assert error.details["variable"] == "FX_TOKEN_UNSET"


async def test_http_unreachable_is_startup_failed() -> None:
    cfg = config({"type": "http", "url": "http://127.0.0.1:9/mcp", "startupTimeoutMs": 10_000})
    started = time.monotonic()
    error = await start_error(cfg, env={})
    assert error.reason == "startupFailed"
    assert time.monotonic() - started < 8


async def test_a_login_that_stopped_working_outranks_the_loss_recorded_before_it() -> None:
    """A refused refresh breaks the request that asked for it, so the session's end can be recorded first (seen in
    CI: ``connectionLost``, then the login's refusal): the row must say a login is needed, since only a login helps,
    not ``failed``; a later generic loss does not take that back."""
    ended = anyio.Event()
    connection = new_slot("fx", stdio(), env=dict(os.environ), sink=Sink(), on_lost=lambda _slot: ended.set())
    assert (await connection.start()).status == "connected"
    connection.lose(AppError("connectionLost", "the connection to the server closed"))
    with anyio.fail_after(10):
        await ended.wait()
    assert connection.state.status == "failed"
    connection.lose(AppError("reauthenticationRequired", "the stored OAuth token could not be refreshed"))
    connection.lose(AppError("connectionLost", "the connection to the server closed"))
    state = connection.state
    assert state.status == "authenticationRequired"
    assert state.last_error is not None and state.last_error.reason == "reauthenticationRequired"
    await connection.close()


async def test_crash_at_start_reports_stderr_tail() -> None:
    started = time.monotonic()
    error = await start_error(script_config("crash_at_start.py", startupTimeoutMs=20_000))
    assert error.reason == "startupFailed"
    assert "exit code 3" in error.message
    assert "fatal configuration error" in error.details["stderrTail"]
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("name", ["hang_at_start.py", "garbage_stdout.py"])
async def test_unresponsive_server_times_out(name: str) -> None:
    started = time.monotonic()
    error = await start_error(script_config(name, startupTimeoutMs=1500))
    assert error.reason == "timeout"
    assert time.monotonic() - started < 8


async def test_missing_command() -> None:
    error = await start_error(config({"command": "/nonexistent/definitely-not-a-server"}))
    assert error.reason == "startupFailed"
    assert "command not found" in error.message


async def test_too_many_tools() -> None:
    error = await start_error(stdio("--extra-tools", "130"))
    assert error.reason == "tooManyTools"


async def test_ignored_discover_does_not_stall() -> None:
    connection = new_slot("fx", script_config("ignore_discover.py", startupTimeoutMs=20_000), env={}, sink=Sink())
    state = await connection.start()
    try:
        assert state.protocol_version == "2025-11-25"
    finally:
        await connection.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_close_reaps_grandchildren(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    cfg = script_config("spawn_grandchild.py", env={"FIXTURE_PID_FILE": str(pid_file)}, startupTimeoutMs=20_000)
    connection = new_slot("fx", cfg, env={}, sink=Sink())
    await connection.start()
    grandchild = int(pid_file.read_text())
    assert _alive(grandchild)
    await connection.close()
    with anyio.fail_after(5):  # bounded wait for init to reap the killed orphan
        while _alive(grandchild):
            await anyio.sleep(0.02)


async def test_stderr_tail_is_redacted() -> None:
    secret = "hunter2-very-secret-value"
    env = {"FX_SECRET": secret}
    cfg = stdio(envVars=["FX_SECRET"], env={"OTHER": "other-inline-secret"})
    connection = new_slot("fx", cfg, env=env, sink=Sink())
    await connection.start()
    await connection.call_tool("stderr_secret", {"value": secret}, timeout_s=10)
    await connection.call_tool("stderr_secret", {"value": "other-inline-secret"}, timeout_s=10)
    await connection.close()
    tail = connection.state.stderr_tail or ""
    assert "secret=***" in tail
    assert secret not in tail
    assert "other-inline-secret" not in tail


async def test_env_policy_passes_only_named_variables(tmp_path: Path) -> None:
    # The grandchild fixture writes FIXTURE_PID_FILE only if it reached the child: a daemon variable not named
    # in envVars must not.
    pid_file = tmp_path / "pid"
    daemon_env = {"FIXTURE_PID_FILE": str(pid_file)}
    cfg = script_config("spawn_grandchild.py", startupTimeoutMs=20_000)
    connection = new_slot("fx", cfg, env=daemon_env, sink=Sink())
    await connection.start()
    await connection.close()
    assert not pid_file.exists()
    cfg = script_config("spawn_grandchild.py", envVars=["FIXTURE_PID_FILE"], startupTimeoutMs=20_000)
    connection = new_slot("fx", cfg, env=daemon_env, sink=Sink())
    await connection.start()
    await connection.close()
    assert pid_file.exists()


@pytest.mark.skipif(
    not (NODE_MODULES / ".bin" / "mcp-server-everything").exists() or shutil.which("node") is None,
    reason="node_modules not installed",
)
async def test_everything_server() -> None:
    connection = new_slot("every", config(everything_config(startupTimeoutMs=30_000)), env={}, sink=Sink())
    state = await connection.start()
    try:
        assert state.protocol_version == "2025-11-25"
        assert "echo" in {tool.name for tool in state.tools}
        result = await connection.call_tool("echo", {"message": "hi"}, timeout_s=10)
        assert "hi" in result["content"][0]["text"]
    finally:
        await connection.close()


# ------------------------------------------------------------------ manager


def manager_for(configs: dict[str, McpServerConfig], sink: Sink) -> McpClientManager:
    data_dir = Path(tempfile.mkdtemp())
    settings = RuntimeSettings(ConfigPolicy(), (), data_dir)
    return McpClientManager(
        lambda: dict(configs), sink, dict(os.environ), data_dir, spawner=_spawners[-1], settings=settings
    )


async def test_manager_start_stop_and_statuses() -> None:
    sink = Sink()
    configs = {
        "fx": stdio(),
        "off": config({**fixture_config(), "enabled": False}, name="off"),
        "idle": config(fixture_config(), name="idle"),
    }
    manager = manager_for(configs, sink)
    try:
        status = await manager.start("fx")
        assert status.runtime_status == "connected"
        assert "echo" in status.tools
        # Starting a connected server returns its status and publishes nothing new.
        await manager.start("fx")
        assert [p["status"] for p in sink.of("mcpServer/startupStatus/updated")] == ["starting", "ready"]
        assert all(p["threadId"] is None for p in sink.of("mcpServer/startupStatus/updated"))
        by_name = {s.name: s.runtime_status for s in manager.statuses()}
        assert by_name == {"fx": "connected", "off": "disabled", "idle": "notStarted"}
        assert [p.name for p in await manager.prompts("fx")] == ["greet"]
        with pytest.raises(AppError) as info:
            await manager.prompts("idle")
        assert info.value.reason == "notRunning"
        with pytest.raises(AppError) as info:
            await manager.prompts("nope")
        assert info.value.reason == "unknownServer"
        await manager.stop("fx")
        assert manager.status("fx").runtime_status == "notStarted"
    finally:
        await manager.aclose()


async def test_manager_failed_start_publishes_before_raising() -> None:
    sink = Sink()
    manager = manager_for({"bad": script_config("crash_at_start.py")}, sink)
    try:
        with pytest.raises(AppError) as info:
            await manager.start("bad")
        assert info.value.reason == "startupFailed"
        published = sink.of("mcpServer/startupStatus/updated")
        assert [p["status"] for p in published] == ["starting", "failed"]
        assert published[1]["error"]["reason"] == "startupFailed"
        status = manager.status("bad")
        assert status.runtime_status == "failed"
        assert status.last_error is not None and status.last_error.reason == "startupFailed"
        assert "fatal configuration error" in (status.stderr_tail or "")
    finally:
        await manager.aclose()


async def test_manager_stop_interrupts_start() -> None:
    sink = Sink()
    manager = manager_for({"hang": script_config("hang_at_start.py", startupTimeoutMs=60_000)}, sink)
    outcome: list[BaseException] = []

    async def starter() -> None:
        try:
            await manager.start("hang")
        except AppError as exc:
            outcome.append(exc)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(starter)
            await sink.wait_for(lambda m, p: p.get("status") == "starting")
            # statuses() answers at once while the server is starting.
            assert manager.status("hang").runtime_status == "starting"
            await manager.stop("hang")
        assert [p["status"] for p in sink.of("mcpServer/startupStatus/updated")] == ["starting", "cancelled"]
        assert isinstance(outcome[0], AppError) and outcome[0].reason == "cancelled"
    finally:
        await manager.aclose()


async def test_manager_start_enabled_in_parallel() -> None:
    sink = Sink()
    configs = {"a": stdio(), "b": config(fixture_config(startupTimeoutMs=20_000), name="b")}
    manager = manager_for(configs, sink)
    try:
        await manager.start_enabled()
        assert {s.name: s.runtime_status for s in manager.statuses()} == {"a": "connected", "b": "connected"}
    finally:
        await manager.aclose()
    assert all(s.runtime_status == "notStarted" for s in manager.statuses())


class _Refusing:
    """A loopback HTTP server answering every request with one fixed status (redirect/401 policy tests)."""

    def __init__(self, status: int) -> None:
        import http.server
        import threading

        code = status

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                self.send_response(code)
                self.send_header("Location", "/elsewhere")
                self.send_header("WWW-Authenticate", "Bearer")
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_GET = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/mcp"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize(
    ("status", "reason"), [(307, "redirectRejected"), (302, "redirectRejected"), (401, "authRequired")]
)
async def test_http_policy_refusals(status: int, reason: str) -> None:
    server = _Refusing(status)
    try:
        error = await start_error(config({"type": "http", "url": server.url, "startupTimeoutMs": 10_000}), env={})
        assert error.reason == reason
    finally:
        server.close()


async def test_manager_restarts_a_crashed_server() -> None:
    import signal

    sink = Sink()
    manager = manager_for({"fx": stdio()}, sink)
    try:
        await manager.start("fx")
        pid = manager.pid("fx")
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        statuses = sink.of  # alias for brevity

        def restarted(m: str, p: dict[str, Any]) -> bool:
            return [e["status"] for e in statuses("mcpServer/startupStatus/updated")] == [
                "starting",
                "ready",
                "failed",  # the loss says why at once
                "starting",
                "ready",
            ]

        await sink.wait_for(restarted, timeout=30)
        assert manager.status("fx").runtime_status == "connected"
        assert manager.pid("fx") != pid
    finally:
        await manager.aclose()


async def test_connection_lost_is_reported() -> None:
    import signal

    lost = anyio.Event()
    connection = new_slot("fx", stdio(), env={}, sink=Sink(), on_lost=lambda _c: lost.set())
    await connection.start()
    assert connection.pid is not None
    os.kill(connection.pid, signal.SIGKILL)
    with anyio.fail_after(10):
        await lost.wait()
    state = connection.state
    assert state.status == "failed"
    assert state.last_error is not None and state.last_error.reason == "connectionLost"
    with pytest.raises(AppError) as info:
        await connection.call_tool("echo", {"text": "x"}, timeout_s=5)
    assert info.value.reason == "notRunning"
    await connection.close()


async def test_validate_tools_rules() -> None:
    from mcp_runtime.session.refresh import validate_tools

    schema = {"type": "object"}
    assert [t.name for t in validate_tools("fx", [{"name": "ok", "inputSchema": schema}])] == ["ok"]
    bad = [
        [{"name": "", "inputSchema": schema}],
        [{"name": "a b", "inputSchema": schema}],
        [{"name": "dup", "inputSchema": schema}, {"name": "dup", "inputSchema": schema}],
        [{"name": "x" * 60, "inputSchema": schema}],
    ]
    for tools in bad:
        with pytest.raises(AppError) as info:
            validate_tools("fx", tools)
        assert info.value.reason == "invalidToolName"
    with pytest.raises(AppError) as info:
        validate_tools("fx", [{"name": "t", "inputSchema": {"type": "objectx"}}])
    assert info.value.reason == "startupFailed"
    with pytest.raises(AppError) as info:
        validate_tools("fx", [{"name": f"t{i}", "inputSchema": schema} for i in range(129)])
    assert info.value.reason == "tooManyTools"
    with pytest.raises(AppError) as info:
        validate_tools("fx", [{"name": f"t{i}", "inputSchema": schema, "description": "d" * 5000} for i in range(120)])
    assert info.value.reason == "catalogTooLarge"


async def test_cancelling_a_start_is_prompt_and_publishes_cancelled() -> None:
    sink = Sink()
    manager = manager_for({"hang": script_config("hang_at_start.py", startupTimeoutMs=60_000)}, sink)
    try:
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(manager.start, "hang")
            await sink.wait_for(lambda m, p: p.get("status") == "starting")
            tg.cancel_scope.cancel()
        assert time.monotonic() - started < 10
        assert [p["status"] for p in sink.of("mcpServer/startupStatus/updated")] == ["starting", "cancelled"]
        assert manager.status("hang").runtime_status == "cancelled"
    finally:
        await manager.aclose()
