"""The platform units on their own: the launch plan of a stdio server, the login-shell PATH reader (failing,
hanging, noisy shells) and the child watcher process."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from app_server.process import options
from mcp_runtime.config.rules import parse_server_config
from mcp_runtime.platform import shell_path
from mcp_runtime.platform.shell_path import LoginPath, parse, read_login_path
from mcp_runtime.session import launch
from protocol.jsonrpc import AppError
from testing.daemon_client import ROOT

pytestmark = pytest.mark.daemon

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shells, process groups")
MARK = b"__m__"


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def _killed(pids: list[int], timeout: float = 10.0) -> bool:
    """Whether every pid is dead within ``timeout`` (SIGKILL was sent; its delivery is the kernel's, not ours)."""
    deadline = time.monotonic() + timeout
    while any(_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.parametrize(
    ("output", "folders"),
    [
        (b"motd\n__m__/a:/b:/a:rel::/c\n__m__trailing", ("/a", "/b", "/c")),
        (b"PATH=/x\n", ()),
        (b"__m__/a\n", ()),
        (b"__m____m__", ()),
        (b"__m__/a\0b\n__m__", ()),
        (b"__m__/a\n/b\n__m__", ()),
        (b"__m__\xff/a\n__m__", ()),
    ],
)
def test_only_a_path_between_the_markers_is_taken(output: bytes, folders: tuple[str, ...]) -> None:
    assert parse(output, MARK) == folders


def read_with(shell: Path) -> tuple[str, ...]:
    return anyio.run(read_login_path, {"SHELL": str(shell)})


@posix_only
def test_a_failing_a_noisy_and_a_missing_shell_add_nothing(tmp_path: Path) -> None:
    assert read_with(executable(tmp_path / "fails", "#!/bin/sh\nexit 1\n")) == ()
    assert read_with(executable(tmp_path / "noise", "#!/bin/sh\necho PATH=/bin/evil\necho garbage\n")) == ()
    assert shell_path.login_shell({"SHELL": str(tmp_path / "absent")}) is None
    assert read_with(tmp_path / "absent") == ()


@posix_only
def test_a_hanging_shell_is_killed_with_its_group_and_adds_nothing(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    shell = executable(tmp_path / "hangs", f"#!/bin/sh\nsleep 300 &\necho $! $$ > {pids}\nwait\n")
    assert read_with(shell) == ()
    assert _killed([int(pid) for pid in pids.read_text().split()])


@posix_only
def test_a_profile_job_holding_stdout_does_not_hold_the_read(tmp_path: Path) -> None:
    """The PATH is taken once both markers are read, though a background job keeps the pipe open; that job goes
    with the shell's group."""
    pids = tmp_path / "pids"
    shell = executable(tmp_path / "sh", f'#!/bin/sh\nsleep 300 &\necho $! > {pids}\nexec /bin/sh -c "$2"\n')
    folders = anyio.run(read_login_path, {"SHELL": str(shell), "PATH": "/opt/tools:/usr/bin"})
    assert folders == ("/opt/tools", "/usr/bin")
    assert _killed([int(pids.read_text())])


@posix_only
def test_starts_waiting_together_share_one_read(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shell = executable(tmp_path / "sh", f'#!/bin/sh\necho run >> {runs}\nexec /bin/sh -c "$2"\n')
    login = LoginPath()
    env = {"SHELL": str(shell), "PATH": "/opt/a:/usr/bin:/bin"}

    async def main() -> list[tuple[str, ...]]:
        found: list[tuple[str, ...]] = []

        async def one() -> None:
            found.append(await login.fresh(env))

        async with anyio.create_task_group() as tasks:
            for _ in range(3):
                tasks.start_soon(one)
        found.append(await login.fresh(env))
        return found

    assert anyio.run(main) == [("/opt/a", "/usr/bin", "/bin")] * 4
    assert runs.read_text() == "run\n"


def test_a_read_is_kept_for_the_next_launch_of_the_same_shell(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    shell = executable(tmp_path / "sh", '#!/bin/sh\nexec /bin/sh -c "$2"\n')
    other = executable(tmp_path / "zsh", '#!/bin/sh\nexec /bin/sh -c "$2"\n')
    env = {"SHELL": str(shell), "PATH": "/opt/a:/usr/bin"}
    first = LoginPath()
    first.keep_in(data_dir)
    assert first.known(env) is None, "nothing kept yet: a first launch waits for the read"
    assert anyio.run(first.fresh, env) == ("/opt/a", "/usr/bin")
    kept = data_dir / "login-path.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert json.loads(kept.read_text()) == {"version": 1, "shell": str(shell), "path": ["/opt/a", "/usr/bin"]}
    second = LoginPath()
    second.keep_in(data_dir)
    assert second.known(env) == ("/opt/a", "/usr/bin"), "the next launch uses it at once"
    third = LoginPath()
    third.keep_in(data_dir)
    assert third.known({**env, "SHELL": str(other)}) is None, "another shell's PATH is not this one's"


def test_the_launch_without_a_sandbox_finds_the_command_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    program = executable(tools / "srv", "#!/bin/sh\n")
    monkeypatch.setenv("PATH", "/usr/bin")
    config = parse_server_config("a", {"command": "srv", "args": ["-x"], "env": {"K": "v"}})
    started = launch.plan(config, {}, (), [str(tools), "relative"])
    assert (started.executable, started.argv) == (str(program), ["srv", "-x"])
    assert started.env["PATH"] == f"/usr/bin{os.pathsep}{tools}" and started.env["K"] == "v"

    with pytest.raises(AppError) as err:
        launch.plan(parse_server_config("a", {"command": "nope"}), {}, (), [str(tools)])
    assert (err.value.reason, err.value.details) == (
        "startupFailed",
        {"detail": "commandNotFound", "command": "nope", "searched": ["/usr/bin", str(tools)]},
    )


def test_the_launch_with_a_sandbox_passes_the_server_variables_in_the_environment_never_as_arguments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin")
    monkeypatch.setenv("LOGNAME", "me")
    config = parse_server_config("a", {"command": "npx", "args": ["srv"], "env": {"K": "v w"}, "envVars": ["TOKEN"]})
    started = launch.plan(config, {"TOKEN": "t"}, ("/usr/bin/bwrap", "--ro-bind", "/", "/"), ["/opt/node"])
    assert started.executable == "/usr/bin/bwrap"
    script = started.argv[6]
    assert started.argv == ["/usr/bin/bwrap", "--ro-bind", "/", "/", "/bin/sh", "-c", script, "/bin/sh", "npx", "srv"]
    assert not any(value in part for part in started.argv for value in ("v w", "TOKEN", "/opt/node"))
    carriers = {k: v for k, v in started.env.items() if k.startswith("MCP_APP_SERVER_ENV_")}
    assert sorted(carriers.values()) == ["K=v w", "PATH=/usr/bin:/opt/node", "TOKEN=t"]
    assert {k: v for k, v in started.env.items() if k not in carriers} == launch.safe_environment()
    # the script, run by a real shell, gives the command exactly those variables
    command = ["/bin/sh", "-c", script, "/bin/sh", "/usr/bin/env"]
    done = subprocess.run(command, env=started.env, capture_output=True, text=True, check=True)
    got = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert got == {**launch.safe_environment(), "PATH": "/usr/bin:/opt/node", "TOKEN": "t", "K": "v w"}

    own = parse_server_config("a", {"command": "npx", "env": {"MCP_APP_SERVER_ENV_0": "mine"}})
    taken = launch.plan(own, {}, ("/usr/bin/bwrap",), [])
    assert "MCP_APP_SERVER_ENV_0" not in taken.env  # a config's variable is never read as a carrier
    assert "MCP_APP_SERVER_ENV_0=mine" in [v for k, v in taken.env.items() if k.startswith("_MCP_APP_SERVER_ENV_")]


def test_the_sandbox_wrapper_is_resolved_in_the_daemon_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wrapper = executable(tmp_path / "bwrap", "#!/bin/sh\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert options.parse(["--stdio-sandbox", '["bwrap", "--x"]']).stdio_sandbox == (str(wrapper), "--x")
    assert options.parse([]).stdio_sandbox == ()
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(options.UsageError, match="bwrap"):
        options.parse(["--stdio-sandbox", '["bwrap"]'])


@posix_only
def test_the_watcher_kills_every_group_still_registered_at_end_of_file() -> None:
    """Registered groups (a leader and its grandchild) die at EOF; an unregistered group and junk lines are left."""

    def group() -> subprocess.Popen[bytes]:
        return subprocess.Popen(["/bin/sh", "-c", "sleep 300 & wait"], start_new_session=True)

    first, second, spared = group(), group(), group()
    watcher = subprocess.Popen(
        [sys.executable, "-m", "app_server", "watch-children"],
        stdin=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert watcher.stdin is not None
    try:
        lines = f"+{first.pid}\n+{second.pid}\n+{spared.pid}\n-{spared.pid}\n+1\n+0\nnoise\n-{first.pid}"
        watcher.stdin.write(lines.encode())
        watcher.stdin.close()  # end of file, in the middle of a line: that line counts for nothing
        assert watcher.wait(timeout=30) == 0
        assert first.wait(timeout=10) == -signal.SIGKILL and second.wait(timeout=10) == -signal.SIGKILL
        assert spared.poll() is None
    finally:
        for process in (first, second, spared):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
