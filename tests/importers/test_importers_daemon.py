"""importFromApp / syncAllToLive through the real daemon, with HOME pointing at a fixture home."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomlkit

from testing.daemon_client import Daemon, DaemonError, running_daemon

pytestmark = pytest.mark.daemon

CODEX_TOML = """# my codex settings
model = "o4"  # keep me

[mcp_servers.mine]
command = "my-tool"   # user entry
args = ["--fast"]

[profiles.work]
approval = "never"
"""

VSCODE_JSONC = """// user settings for MCP
{
  "servers": {
    // a server I wrote by hand
    "hand": {"type": "stdio", "command": "hand-tool",},
  },
  "inputs": [],
}
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def app_daemon(data_dir: Path, home: Path) -> Iterator[Daemon]:
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "CODEX_HOME": str(home / ".codex")}
    with running_daemon(data_dir, env=env) as d:
        d.initialize()
        yield d


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_import_from_claude_code_skips_bad_entries_with_reasons(app_daemon: Daemon, home: Path) -> None:
    write(home / ".claude.json", json.dumps({
        "numStartups": 3,
        "mcpServers": {
            "fs": {"type": "stdio", "command": "npx", "args": ["-y", "server-filesystem"]},
            "docs": {"type": "http", "url": "https://docs.example.com/mcp", "headers": {"X-Title": "app"}},
            "leaky": {"type": "http", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer abc"}},
            "plain": {"type": "http", "url": "http://remote.example/mcp"},
            "bad__name": {"command": "x"},
        },
    }))
    dry = app_daemon.request("mcpServer/importFromApp", {"app": "claude", "dryRun": True})
    assert sorted(dry["imported"]) == ["docs", "fs"]
    assert app_daemon.request("mcpServer/list") == {"data": []}
    result = app_daemon.request("mcpServer/importFromApp", {"app": "claude"})
    assert sorted(result["imported"]) == ["docs", "fs"]
    reasons = {s["name"]: s["reason"] for s in result["skipped"]}
    assert reasons == {"leaky": "inlineSecret", "plain": "insecureUrl", "bad__name": "invalidServerName"}
    assert "abc" not in json.dumps(result)
    listed = {s["name"]: s for s in app_daemon.request("mcpServer/list")["data"]}
    assert listed["fs"]["source"] == "import:claude"
    again = app_daemon.request("mcpServer/importFromApp", {"app": "claude"})
    assert again["imported"] == []
    assert {s["name"]: s["reason"] for s in again["skipped"]}["fs"] == "alreadyPresent"


def test_import_reports_a_changed_existing_name_as_server_exists(app_daemon: Daemon, home: Path) -> None:
    app_daemon.request("mcpServer/create", {"name": "fs", "config": {"command": "other"}})
    write(home / ".cursor" / "mcp.json", json.dumps({"mcpServers": {"fs": {"command": "npx"}}}))
    result = app_daemon.request("mcpServer/importFromApp", {"app": "cursor"})
    assert result["skipped"] == [{"name": "fs", "reason": "serverExists"}]


def test_import_from_codex_gemini_vscode_and_desktop(app_daemon: Daemon, home: Path) -> None:
    write(home / ".codex" / "config.toml", CODEX_TOML + '\n[mcp_servers.web]\nurl = "https://w.example/mcp"\n'
          'bearer_token_env_var = "WEB_TOKEN"\ntool_timeout_sec = 12\n')
    write(home / ".gemini" / "settings.json", json.dumps(
        {"theme": "x", "mcpServers": {"g": {"httpUrl": "https://g.example/mcp", "timeout": 5000,
                                            "includeTools": ["a"]}}}))
    write(home / ".config" / "Code" / "User" / "mcp.json", VSCODE_JSONC)
    write(home / ".config" / "Claude" / "claude_desktop_config.json",
          json.dumps({"mcpServers": {"desk": {"command": "desk-tool", "args": ["1"]}}}))
    assert sorted(app_daemon.request("mcpServer/importFromApp", {"app": "codex"})["imported"]) == ["mine", "web"]
    assert app_daemon.request("mcpServer/importFromApp", {"app": "gemini"})["imported"] == ["g"]
    assert app_daemon.request("mcpServer/importFromApp", {"app": "vscode"})["imported"] == ["hand"]
    assert app_daemon.request("mcpServer/importFromApp", {"app": "claudeDesktop"})["imported"] == ["desk"]
    servers = {s["name"]: s["config"] for s in app_daemon.request("mcpServer/list")["data"]}
    assert servers["web"]["bearerTokenEnvVar"] == "WEB_TOKEN" and servers["web"]["toolTimeoutMs"] == 12000
    assert servers["g"]["type"] == "http" and servers["g"]["enabledTools"] == ["a"]
    assert servers["g"]["toolTimeoutMs"] == 5000


def test_import_with_explicit_path_and_missing_file(app_daemon: Daemon, tmp_path: Path) -> None:
    custom = write(tmp_path / "elsewhere.json", json.dumps({"mcpServers": {"c": {"command": "c"}}}))
    assert app_daemon.request("mcpServer/importFromApp", {"app": "cursor", "path": str(custom)})["imported"] == ["c"]
    with pytest.raises(DaemonError) as err:
        app_daemon.request("mcpServer/importFromApp", {"app": "cursor", "path": str(tmp_path / "nope.json")})
    assert err.value.reason == "unknownResource"


def test_sync_writes_only_the_mcp_section_and_keeps_user_entries(app_daemon: Daemon, home: Path) -> None:
    codex = write(home / ".codex" / "config.toml", CODEX_TOML)
    vscode = write(home / ".config" / "Code" / "User" / "mcp.json", VSCODE_JSONC)
    app_daemon.request("mcpServer/create", {"name": "ours", "config": {
        "type": "http", "url": "https://ours.example/mcp", "bearerTokenEnvVar": "OURS_TOKEN",
        "apps": {"codex": True, "vscode": True}}})
    dry = app_daemon.request("mcpServer/syncAllToLive", {"apps": ["codex"], "dryRun": True})["results"][0]
    assert dry["changed"] is True and codex.read_text() == CODEX_TOML
    results = {r["app"]: r for r in app_daemon.request("mcpServer/syncAllToLive", {"apps": ["codex", "vscode"]})[
        "results"]}
    assert results["codex"]["changed"] and results["vscode"]["changed"]
    assert Path(results["codex"]["backupPath"]).read_text() == CODEX_TOML
    text = codex.read_text()
    assert "# my codex settings" in text and 'model = "o4"  # keep me' in text and "# user entry" in text
    doc = tomlkit.parse(text)
    assert doc["mcp_servers"]["ours"]["bearer_token_env_var"] == "OURS_TOKEN"
    assert doc["mcp_servers"]["mine"]["command"] == "my-tool"
    assert doc["profiles"]["work"]["approval"] == "never"
    vs = vscode.read_text()
    assert "// a server I wrote by hand" in vs and '"hand": {"type": "stdio", "command": "hand-tool",}' in vs
    assert '"ours"' in vs and "${env:OURS_TOKEN}" in vs
    app_daemon.request("mcpServer/enabled/set", {"name": "ours", "enabled": False, "app": "codex"})
    app_daemon.request("mcpServer/syncAllToLive", {"apps": ["codex"]})
    assert codex.read_text() == CODEX_TOML


def test_sync_reports_an_unparsable_target_and_leaves_it(app_daemon: Daemon, home: Path) -> None:
    broken = write(home / ".gemini" / "settings.json", '{"mcpServers": {"x": ')
    app_daemon.request("mcpServer/create", {"name": "ours", "config": {"command": "tool", "apps": {"gemini": True}}})
    result = app_daemon.request("mcpServer/syncAllToLive", {"apps": ["gemini"]})["results"][0]
    assert result["error"]["reason"] == "parseError" and result["changed"] is False
    assert broken.read_text() == '{"mcpServers": {"x": '
    assert app_daemon.request("mcpServer/list")["data"][0]["name"] == "ours"


def test_sync_never_writes_literal_secrets(app_daemon: Daemon, home: Path) -> None:
    app_daemon.request("mcpServer/create", {"name": "envy", "config": {
        "command": "tool", "env": {"API_TOKEN": "sk-secret-1"}, "apps": {"cursor": True}}})
    result = app_daemon.request("mcpServer/syncAllToLive", {"apps": ["cursor"]})["results"][0]
    target = home / ".cursor" / "mcp.json"
    assert "sk-secret-1" not in (target.read_text() if target.exists() else "")
    assert "envy" not in result["servers"] and result["warnings"]


def test_settings_round_trip_then_sync_writes_what_the_user_wrote(app_daemon: Daemon, home: Path) -> None:
    config = {
        "type": "http", "url": "https://docs.example.com/mcp", "headers": {"X-Title": "my-app"},
        "envHeaders": {"X-Api-Key": "DOCS_KEY"}, "enabled": True, "apps": {"codex": True, "claude": True},
    }  # fmt: skip
    app_daemon.request("mcpServer/create", {"name": "docs", "config": config})
    shown = app_daemon.request("mcpServer/list", {"names": ["docs"]})["data"][0]["config"]
    assert "startupTimeoutMs" not in shown and "toolTimeoutMs" not in shown
    app_daemon.request("mcpServer/update", {"name": "docs", "config": {**shown, "description": "edited"}})

    results = app_daemon.request("mcpServer/syncAllToLive", {"apps": ["codex", "claude"]})["results"]
    assert [(r["app"], r["servers"], r.get("error")) for r in results] == [
        ("codex", ["docs"], None), ("claude", ["docs"], None),
    ]  # fmt: skip
    codex = tomlkit.parse((home / ".codex" / "config.toml").read_text()).unwrap()["mcp_servers"]["docs"]
    assert codex == {
        "url": "https://docs.example.com/mcp",
        "http_headers": {"X-Title": "my-app"},
        "env_http_headers": {"X-Api-Key": "DOCS_KEY"},
    }
    claude = json.loads((home / ".claude.json").read_text())["mcpServers"]["docs"]
    assert claude["headers"] == {"X-Title": "my-app", "X-Api-Key": "${DOCS_KEY}"}
    again = app_daemon.request("mcpServer/syncAllToLive", {"apps": ["codex", "claude"]})["results"]
    assert [r["changed"] for r in again] == [False, False]


def test_import_claude_code_project_scoped_servers(app_daemon: Daemon, home: Path) -> None:
    write(home / ".claude.json", json.dumps({
        "mcpServers": {"fs": {"command": "npx"}},
        "projects": {
            "/src/app": {"mcpServers": {"db": {"command": "db-tool"}, "fs": {"command": "other"}}},
        },
    }))  # fmt: skip
    result = app_daemon.request("mcpServer/importFromApp", {"app": "claude"})
    assert sorted(result["imported"]) == ["db", "fs"]
    assert result["skipped"] == [{"name": "fs", "reason": "nameConflict"}]
    assert any("/src/app" in w for w in result["warnings"])
    listed = {s["name"]: s for s in app_daemon.request("mcpServer/list")["data"]}
    assert listed["db"]["source"] == "import:claude" and listed["fs"]["config"]["command"] == "npx"


def test_sync_creates_each_new_app_config_0600_and_keeps_an_existing_files_mode(app_daemon: Daemon, home: Path) -> None:
    """A synced file holds env literals (a harmless name's value is written as it is): a file the sync creates is
    the user's alone; a file that was there keeps the mode its owner gave it."""
    apps = ["claude", "claudeDesktop", "codex", "gemini", "cursor", "vscode"]
    config = {"command": "tool", "env": {"LOG_LEVEL": "warn"}, "apps": dict.fromkeys(apps, True)}
    app_daemon.request("mcpServer/create", {"name": "ours", "config": config})
    shared = write(home / ".cursor" / "mcp.json", "{}")
    shared.chmod(0o644)
    results = app_daemon.request("mcpServer/syncAllToLive", {"apps": apps})["results"]
    assert [r.get("error") for r in results] == [None] * len(apps)
    modes = {r["app"]: stat.S_IMODE(Path(r["path"]).stat().st_mode) for r in results}
    assert modes == {**dict.fromkeys(apps, 0o600), "cursor": 0o644}
    assert all("warn" in Path(r["path"]).read_text() for r in results)
