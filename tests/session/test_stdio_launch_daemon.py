"""How the real daemon starts a stdio server (SPEC §5, §10): a sandbox wrapper no config can choose or reach into,
loader variables refused, and commands found through the login shell's ``PATH`` (``--path-from-shell``)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import ROOT, Daemon, DaemonError, running_daemon
from testing.fixtures import FIXTURES, fixture_config

pytestmark = pytest.mark.daemon

START_TIMEOUT = 60.0
BASH = Path("/bin/bash")
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="stdio servers and sandboxes are POSIX")


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def recording_wrapper(folder: Path, record: Path, label: str) -> Path:
    """A ``bwrap``-named wrapper that appends its label, its own path, its arguments and its environment to
    ``record``, then runs what it wraps (as a real sandbox would, inside)."""
    return executable(
        folder / "bwrap",
        f'#!/bin/sh\n{{ echo "ran {label} $0"; printf "arg %s\\n" "$@"; env | sed "s/^/env /"; }} >> "{record}"\n'
        'case "$1" in --die-with-parent) shift ;; esac\nexec "$@"\n',
    )


def error_of(daemon: Daemon, method: str, params: dict[str, Any], timeout: float = START_TIMEOUT) -> DaemonError:
    with pytest.raises(DaemonError) as err:
        daemon.request(method, params, timeout=timeout)
    return err.value


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def env_digest(daemon: Daemon, server: str, name: str) -> str:
    """The SHA-256 of variable ``name`` as the server's process got it (``env_digest`` of the fixture)."""
    thread_id = daemon.request("thread/start", {"servers": [server]})["thread"]["id"]
    result = daemon.request(
        "mcpServer/tool/call",
        {"threadId": thread_id, "server": server, "tool": "env_digest", "arguments": {"name": name}},
        timeout=START_TIMEOUT,
    )
    text: str = result["content"][0]["text"]
    return text


@posix_only
def test_a_config_path_never_chooses_the_sandbox_wrapper(data_dir: Path, tmp_path: Path) -> None:
    """The wrapper is looked up once, in the daemon's PATH: a planted ``bwrap`` in the config's ``env.PATH`` never
    runs, and the server still gets that ``PATH`` (inside the wrapper)."""
    record = tmp_path / "record"
    host, planted = tmp_path / "host", tmp_path / "planted"
    recording_wrapper(host, record, "host")
    recording_wrapper(planted, record, "planted")
    env = {"PATH": f"{host}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    with running_daemon(data_dir, env=env, args=("--stdio-sandbox", '["bwrap"]')) as daemon:
        daemon.initialize()
        config = fixture_config("--env-digest-tool", env={"PATH": str(planted)})
        daemon.request("mcpServer/create", {"name": "fx", "config": config})
        assert env_digest(daemon, "fx", "PATH") == digest(str(planted))
    ran = [line for line in record.read_text().splitlines() if line.startswith("ran ")]
    assert ran and all(line == f"ran host {host / 'bwrap'}" for line in ran), ran


@posix_only
def test_config_variables_reach_the_server_inside_the_wrapper_never_the_wrapper(data_dir: Path, tmp_path: Path) -> None:
    """The server's variables cross the wrapper in carrier variables only: never under their own names in the
    wrapper's environment, and never in any process's argv (``/proc/<pid>/cmdline`` is readable by every user)."""
    record = tmp_path / "record"
    wrapper = recording_wrapper(tmp_path / "host", record, "host")
    secret = "config-secret-value"
    env = {"MY_TOKEN": "daemon-token-value"}
    args = ("--stdio-sandbox", json.dumps([str(wrapper), "--die-with-parent"]))
    with running_daemon(data_dir, env=env, args=args) as daemon:
        daemon.initialize()
        config = fixture_config("--env-digest-tool", env={"API_KEY": secret}, envVars=["MY_TOKEN"])
        daemon.request("mcpServer/create", {"name": "fx", "config": config})
        assert env_digest(daemon, "fx", "API_KEY") == digest(secret)
        assert env_digest(daemon, "fx", "MY_TOKEN") == digest("daemon-token-value")
        # the servers are running now: no process of the machine shows either value in its command line
        running = command_lines()
        assert any("--env-digest-tool" in line for line in running.values())  # the server is among them
        assert [line for line in running.values() if secret in line or "daemon-token-value" in line] == []
    lines = record.read_text().splitlines()
    arguments = [line for line in lines if line.startswith("arg ")]
    assert arguments and not any(secret in line or "daemon-token-value" in line for line in arguments)
    wrapper_env = dict(line.removeprefix("env ").split("=", 1) for line in lines if line.startswith("env "))
    assert "API_KEY" not in wrapper_env and "MY_TOKEN" not in wrapper_env
    carriers = {name for name in wrapper_env if name.startswith("MCP_APP_SERVER_ENV_")}
    assert {wrapper_env[name] for name in carriers} >= {f"API_KEY={secret}", "MY_TOKEN=daemon-token-value"}
    # The SDK's safe default set and the carriers, nothing else the daemon has (the shell adds PWD, SHLVL, `_`).
    rest = set(wrapper_env) - carriers - {"PWD", "SHLVL", "_", "OLDPWD"}
    assert rest <= {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}


def command_lines() -> dict[int, str]:
    """Every readable process's command line (``/proc/<pid>/cmdline``, arguments joined by spaces)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
    return found


@pytest.mark.parametrize("variable", ["LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES"])
@pytest.mark.parametrize("sandbox", [(), ("--stdio-sandbox", '["env"]')], ids=["plain", "sandboxed"])
def test_loader_variables_are_refused_wherever_a_config_is_accepted(
    data_dir: Path, tmp_path: Path, variable: str, sandbox: tuple[str, ...]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    unsafe = {"command": "server", "env": {variable: "/tmp/inject.so"}}
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"bad": unsafe, "good": {"command": "server"}}}))
    with running_daemon(data_dir, env={"HOME": str(home)}, args=sandbox) as daemon:
        daemon.initialize()
        created = error_of(daemon, "mcpServer/create", {"name": "bad", "config": unsafe})
        assert (created.code, created.reason, created.data["variable"]) == (-32012, "unsafeEnv", variable)

        daemon.request("mcpServer/create", {"name": "ok", "config": {"command": "server", "enabled": False}})
        patched = error_of(daemon, "mcpServer/update", {"name": "ok", "patch": {"env": {variable: "x"}}})
        replaced = error_of(daemon, "mcpServer/update", {"name": "ok", "config": unsafe})
        inline = error_of(daemon, "thread/start", {"mcpServers": {"bad": unsafe}})
        assert {patched.reason, replaced.reason, inline.reason} == {"unsafeEnv"}

        imported = daemon.request("mcpServer/importFromApp", {"app": "claude"})
        assert imported["imported"] == ["good"]
        assert imported["skipped"] == [{"name": "bad", "reason": "unsafeEnv"}]
        assert [s["name"] for s in daemon.request("mcpServer/list")["data"]] == ["good", "ok"]


def test_a_sandbox_wrapper_missing_from_the_daemon_path_is_refused_at_start(data_dir: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "app_server", "--data-dir", str(data_dir), "--stdio-sandbox", '["no-such-wrapper"]'],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": str(tmp_path)},
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stdout == b""
    assert "--stdio-sandbox" in done.stderr.decode() and "no-such-wrapper" in done.stderr.decode()


def login_home(tmp_path: Path) -> tuple[Path, Path]:
    """A home whose bash login profile adds ``~/tools`` to PATH; ``~/tools`` holds ``fixture-mcp`` (the fixture
    server behind ``#!/usr/bin/env fixture-python``, as ``npx`` is behind ``#!/usr/bin/env node``) and
    ``fixture-python``. Returns the home and the tools folder."""
    home = tmp_path / "home"
    tools = home / "tools"
    executable(tools / "fixture-python", f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    executable(
        tools / "fixture-mcp",
        "#!/usr/bin/env fixture-python\nimport runpy, sys\n"
        f"sys.path.insert(0, {str(FIXTURES)!r})\n"
        f"runpy.run_path({str(FIXTURES / 'fixture_server.py')!r}, run_name='__main__')\n",
    )
    (home / ".bash_profile").write_text('echo "profile noise PATH=/nowhere"\nexport PATH="$HOME/tools:$PATH"\n')
    return home, tools


def gui_env(home: Path) -> dict[str, str]:
    """What a GUI-launched host gives its sidecar: a minimal PATH."""
    return {"PATH": f"/usr/bin{os.pathsep}/bin", "HOME": str(home), "SHELL": str(BASH)}


needs_bash = pytest.mark.skipif(not BASH.exists(), reason="the login-shell test uses bash's profile")


@needs_bash
def test_commands_are_found_through_the_login_shell_path(data_dir: Path, tmp_path: Path) -> None:
    home, tools = login_home(tmp_path)
    with running_daemon(data_dir, env=gui_env(home)) as daemon:
        daemon.initialize()
        daemon.request("mcpServer/create", {"name": "fx", "config": {"command": "fixture-mcp"}})
        status = daemon.request("mcpServer/start", {"name": "fx"}, timeout=START_TIMEOUT)["status"]
        assert status["runtimeStatus"] == "connected"

        daemon.request("mcpServer/create", {"name": "gone", "config": {"command": "no-such-command"}})
        err = error_of(daemon, "mcpServer/start", {"name": "gone"})
        assert (err.code, err.reason, err.data["detail"]) == (-32014, "startupFailed", "commandNotFound")
        assert err.data["command"] == "no-such-command"
        searched = err.data["searched"]
        assert searched[:2] == ["/usr/bin", "/bin"] and str(tools) in searched
        assert "/nowhere" not in searched


@needs_bash
def test_never_reads_no_shell(data_dir: Path, tmp_path: Path) -> None:
    home, _ = login_home(tmp_path)
    with running_daemon(data_dir, env=gui_env(home), args=("--path-from-shell", "never")) as daemon:
        daemon.initialize()
        daemon.request("mcpServer/create", {"name": "fx", "config": {"command": "fixture-mcp"}})
        err = error_of(daemon, "mcpServer/start", {"name": "fx"})
        assert (err.reason, err.data["detail"]) == ("startupFailed", "commandNotFound")
        assert err.data["command"] == "fixture-mcp"
        assert err.data["searched"] == ["/usr/bin", "/bin"]
        failed = daemon.wait_notification(
            "mcpServer/startupStatus/updated", lambda p: p["name"] == "fx" and p["status"] == "failed"
        )
        assert failed["error"]["reason"] == "startupFailed"


@posix_only
def test_the_login_shell_runs_once_and_only_for_stdio_servers(data_dir: Path, tmp_path: Path) -> None:
    """Read once for every start (two autostarted servers and a later one), and never by a daemon that starts no
    stdio server."""
    runs = tmp_path / "runs"
    shell = executable(tmp_path / "shell", f'#!/bin/sh\necho run >> "{runs}"\nexec /bin/sh -c "$2"\n')
    env = {"SHELL": str(shell), "PATH": f"/usr/bin{os.pathsep}/bin"}
    with running_daemon(data_dir, env=env) as daemon:
        daemon.initialize()
        daemon.request("mcpServer/create", {"name": "web", "config": {"type": "http", "url": "https://w.example.com"}})
        assert daemon.request("mcpServer/list")["data"]
    assert not runs.exists()

    servers = {name: fixture_config() for name in ("one", "two")}
    (data_dir / "mcps.json").write_text(json.dumps({"version": 1, "mcpServers": servers}))
    with running_daemon(data_dir, env=env) as daemon:
        daemon.initialize()
        for name in servers:
            daemon.wait_notification(
                "mcpServer/startupStatus/updated", lambda p, n=name: p["name"] == n and p["status"] == "ready", 60
            )
        daemon.request("mcpServer/create", {"name": "three", "config": fixture_config()})
        daemon.request("mcpServer/start", {"name": "three"}, timeout=START_TIMEOUT)
    assert runs.read_text() == "run\n"


@posix_only
def test_the_kept_login_path_starts_servers_at_once_and_only_a_missing_command_waits(
    data_dir: Path, tmp_path: Path
) -> None:
    """A login shell that takes seconds (SPEC §10): the first launch ever waits for it; later launches start with
    the PATH it printed last time, read it again in the background, and only a command found on neither waits."""
    home, tools = login_home(tmp_path)
    late = home / "late"
    executable(late / "late-mcp", f'#!/bin/sh\nexec "{tools / "fixture-mcp"}" "$@"\n')
    started, release, done = tmp_path / "shell-started", tmp_path / "release", tmp_path / "shell-done"
    extra = tmp_path / "extra-path"
    shell = executable(
        tmp_path / "slow-shell",
        f'#!/bin/sh\ntouch "{started}"\nwhile [ ! -e "{release}" ]; do sleep 0.05; done\n'
        f'PATH="{tools}:$(cat "{extra}" 2>/dev/null):$PATH"; export PATH\ntouch "{done}"\nexec /bin/sh -c "$2"\n',
    )
    env = {**gui_env(home), "SHELL": str(shell)}
    (data_dir / "mcps.json").write_text(json.dumps({"version": 1, "mcpServers": {"fx": {"command": "fixture-mcp"}}}))

    release.touch()  # the first launch: nothing is kept, the start waits for the shell
    with running_daemon(data_dir, env=env) as daemon:
        daemon.initialize()
        daemon.wait_notification("mcpServer/startupStatus/updated", lambda p: p["status"] == "ready", START_TIMEOUT)
    assert done.exists() and json.loads((data_dir / "login-path.json").read_text())["shell"] == str(shell)

    for marker in (started, release, done):
        marker.unlink()
    with running_daemon(data_dir, env=env) as daemon:
        daemon.initialize()
        daemon.wait_notification("mcpServer/startupStatus/updated", lambda p: p["status"] == "ready", START_TIMEOUT)
        assert not done.exists(), "the server started with the kept PATH, not waiting for the shell"
        deadline = time.monotonic() + START_TIMEOUT
        while not started.exists():  # this launch's read, made once the autostart is over
            assert time.monotonic() < deadline, "the login shell was never read again"
            time.sleep(0.05)
        extra.write_text(str(late))
        release.touch()

        daemon.request("mcpServer/create", {"name": "late", "config": {"command": "late-mcp"}})
        status = daemon.request("mcpServer/start", {"name": "late"}, timeout=START_TIMEOUT)["status"]
        assert status["runtimeStatus"] == "connected", "found on the PATH this launch's read printed"
        daemon.request("mcpServer/create", {"name": "gone", "config": {"command": "no-such-command"}})
        err = error_of(daemon, "mcpServer/start", {"name": "gone"})
        assert err.data["detail"] == "commandNotFound" and str(late) in err.data["searched"]
