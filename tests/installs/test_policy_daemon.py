"""The administrator's policy through the real daemon (SPEC §15): every way in (create, update, import, install,
start, thread start) refuses a denied server with ``policyDenied`` and the rule; a stored denied server never
starts and its row says so; a policy file that does not parse stops the daemon."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import DaemonError, running_daemon
from testing.fixtures import fixture_config

pytestmark = pytest.mark.daemon

EVERYTHING = "io.github.modelcontextprotocol/everything"


def policy_file(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return path


def denied(call: Any) -> dict[str, Any]:
    with pytest.raises(DaemonError) as refused:
        call()
    assert refused.value.reason == "policyDenied" and refused.value.code == -32012, refused.value
    return refused.value.data["rule"]  # type: ignore[no-any-return]


def test_initialize_says_what_the_policy_restricts(tmp_path: Path, data_dir: Path) -> None:
    path = policy_file(tmp_path, {"deniedServers": [{"url": "https://evil.example/*"}], "allowBundles": False})
    with running_daemon(data_dir, args=("--policy", str(path))) as d:
        assert d.initialize()["policy"] == {"source": str(path), "restricts": ["deniedServers", "allowBundles"]}
    with running_daemon(data_dir) as d:
        assert d.initialize()["policy"] == {"source": None, "restricts": []}


@pytest.mark.parametrize("document", ["{not json", '{"deniedServers": [{"color": "red"}]}', '{"allowBundles": "no"}'])
def test_a_policy_file_that_does_not_parse_stops_the_daemon(tmp_path: Path, data_dir: Path, document: str) -> None:
    path = policy_file(tmp_path, document)
    done = subprocess.run(
        [sys.executable, "-m", "app_server", "--data-dir", str(data_dir), "--policy", str(path)],
        input=b"", capture_output=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 2 and str(path).encode() in done.stderr and b"Traceback" not in done.stderr


def test_create_update_start_and_thread_start_refuse_a_denied_command(tmp_path: Path, data_dir: Path) -> None:
    fixture = fixture_config()
    prefix = [fixture["command"], *fixture["args"][:1]]  # the fixture script, whatever its arguments
    path = policy_file(tmp_path, {"deniedServers": [{"command": prefix}]})
    other = {"type": "stdio", "command": "node", "args": ["x.js"]}
    with running_daemon(data_dir, args=("--policy", str(path))) as d:
        d.initialize()
        rule = denied(lambda: d.request("mcpServer/create", {"name": "fx", "config": fixture}))
        assert rule == {"key": "deniedServers", "index": 0, "entry": {"command": prefix}}
        d.request("mcpServer/create", {"name": "ok", "config": other | {"enabled": False}})
        denied(lambda: d.request("mcpServer/update", {"name": "ok", "config": fixture}))
        denied(lambda: d.request("thread/start", {"mcpServers": {"fx": fixture}}))
    stored = {"fx": fixture, "ok": other | {"enabled": True}}
    (data_dir / "mcps.json").write_text(json.dumps({"version": 1, "mcpServers": stored}))  # stored before
    with running_daemon(data_dir, args=("--policy", str(path))) as d:
        d.initialize()
        rows = {row["name"]: row for row in d.request("mcpServer/list", {})["data"]}
        assert rows["fx"]["deniedBy"]["key"] == "deniedServers" and "deniedBy" not in rows["ok"]
        denied(lambda: d.request("mcpServer/start", {"name": "fx"}))
        denied(lambda: d.request("thread/start", {"servers": ["fx"]}))
        assert d.request("thread/start", {})["thread"]["servers"] == ["ok"]  # the denied one is left out
        statuses = d.request("mcpServerStatus/list", {})["data"]
        assert all(s.get("runtimeStatus") != "connected" for s in statuses)  # autostart left it alone


def test_an_allow_list_and_user_servers_off_leave_only_the_allowed_registry_entry(
    tmp_path: Path, data_dir: Path, registry_url: str
) -> None:
    document = {"allowedServers": [{"registryName": EVERYTHING}], "allowUserServers": False}
    path = policy_file(tmp_path, document)
    with running_daemon(data_dir, args=("--policy", str(path), "--registry-url", registry_url)) as d:
        d.initialize()
        rule = denied(lambda: d.request("mcpServer/create", {"name": "mine", "config": fixture_config()}))
        assert rule == {"key": "allowUserServers"}
        other = {"registry": {"name": "io.github.example/loopback-headers", "option": "remote:0"}}
        params = {"name": "r", "source": other, "inputs": {"X-Workspace": "a"}}
        assert denied(lambda: d.request("mcpServer/install", params)) == {"key": "allowedServers"}
        allowed = {"registry": {"name": EVERYTHING, "option": "package:0"}}
        row = d.request("mcpServer/install", {"name": "every", "source": allowed, "enabled": False})["server"]
        assert "deniedBy" not in row


def test_registries_and_bundles_can_be_locked(tmp_path: Path, data_dir: Path, registry_url: str) -> None:
    path = policy_file(tmp_path, {"registries": ["https://registry.example.com"], "allowBundles": False})
    with running_daemon(data_dir, args=("--policy", str(path), "--registry-url", registry_url)) as d:
        d.initialize()
        assert denied(lambda: d.request("mcpServer/registry/search", {})) == {"key": "registries"}
        source = {"bundle": {"path": str(tmp_path / "any.mcpb")}}
        assert denied(lambda: d.request("mcpServer/install", {"name": "b", "source": source})) == {
            "key": "allowBundles"
        }


def test_import_skips_a_denied_server(tmp_path: Path, data_dir: Path) -> None:
    path = policy_file(tmp_path, {"deniedServers": [{"url": "http://127.0.0.1:*/*"}]})
    claude = tmp_path / "claude.json"
    claude.write_text(json.dumps({"mcpServers": {
        "local": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
        "fine": {"command": "node", "args": ["x.js"]},
    }}))  # fmt: skip
    with running_daemon(data_dir, args=("--policy", str(path))) as d:
        d.initialize()
        result = d.request("mcpServer/importFromApp", {"app": "claude", "path": str(claude)})
        assert result["imported"] == ["fine"]
        assert {"name": "local", "reason": "policyDenied"} in result["skipped"]


def test_an_installed_server_edited_into_another_program_must_pass_as_the_users_own(
    tmp_path: Path, data_dir: Path, registry_url: str
) -> None:
    """An allowed entry installed, then updated to run something else (another command, arguments, a new variable
    such as NODE_OPTIONS, another URL): refused as a user's server would be; a new key value or a description is
    still the installed server."""
    document = {"allowedServers": [{"registryName": EVERYTHING}], "allowUserServers": False}
    path = policy_file(tmp_path, document)
    with running_daemon(data_dir, args=("--policy", str(path), "--registry-url", registry_url)) as d:
        d.initialize()
        allowed = {"registry": {"name": EVERYTHING, "option": "package:0"}}
        inputs = {"EVERYTHING_TOKEN": "tok-1"}
        d.request("mcpServer/install", {"name": "every", "source": allowed, "inputs": inputs, "enabled": False})
        again = {"EVERYTHING_TOKEN": "tok-1", "LOG_LEVEL": "info"}  # a new destination takes its values again
        for patch in (
            {"command": "bash", "args": ["-c", "echo owned"], "env": again},
            {"args": ["-y", "some-other-package@1.0.0"], "env": again},
            {"env": {"NODE_OPTIONS": "--require /tmp/evil.js"}},
            {"cwd": str(tmp_path)},
        ):
            rule = denied(lambda patch=patch: d.request("mcpServer/update", {"name": "every", "patch": patch}))
            assert rule == {"key": "allowUserServers"}, patch
        d.request("mcpServer/update", {"name": "every", "patch": {"env": {"EVERYTHING_TOKEN": "tok-2"}}})
        d.request("mcpServer/update", {"name": "every", "patch": {"description": "mine", "toolTimeoutMs": 5000}})
        (row,) = d.request("mcpServer/list", {"names": ["every"]})["data"]
        assert row["config"]["command"] == "npx" and "deniedBy" not in row and row["revision"] == 3
