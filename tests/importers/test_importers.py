"""Import from / sync to external apps, with fixture homes (never the real user's files)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import tomlkit

from mcp_runtime.config.policy import ConfigPolicy
from mcp_runtime.config.rules import parse_server_config
from mcp_runtime.importers import APPS, jsonc, plan_import, resolve_path, sync_app
from mcp_runtime.importers.ledger import LEDGER_FILE
from protocol.jsonrpc import AppError

JSON_APPS = ["claude", "claudeDesktop", "gemini", "cursor", "vscode"]
ALL_APPS = [*JSON_APPS, "codex"]
SECTION = {"claude": "mcpServers", "claudeDesktop": "mcpServers", "gemini": "mcpServers",
           "cursor": "mcpServers", "vscode": "servers"}  # fmt: skip


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def cfg(raw: dict[str, Any], name: str = "x") -> Any:
    return parse_server_config(name, raw)


def app_path(app: str, home: Path) -> Path:
    return resolve_path(APPS[app], None, home, {})  # type: ignore[index]


def write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def do_sync(app: str, home: Path, data_dir: Path, servers: dict[str, Any], dry_run: bool = False) -> Any:
    warnings: list[str] = []
    result = sync_app(
        app,  # type: ignore[arg-type]
        path=None,
        home=home,
        env={},
        servers=servers,
        data_dir=data_dir,
        dry_run=dry_run,
        warnings=warnings,
    )
    return SimpleNamespace(**dict(result), warnings_=warnings)


def section_span(text: str, section: str) -> tuple[int, int]:
    node = jsonc.find_object(jsonc.parse(text), (section,))
    assert node is not None
    return node.start, node.end


def assert_outside_unchanged(before: str, after: str, section: str) -> None:
    """Every byte outside the MCP object is identical."""
    start, end = section_span(before, section)
    new_start, new_end = section_span(after, section)
    assert after[:new_start] == before[:start]
    assert after[new_end:] == before[end:]


# --- locations ------------------------------------------------------------------------------------------


def test_default_paths_come_from_home_and_env(tmp_path: Path) -> None:
    home = tmp_path
    assert resolve_path(APPS["claude"], None, home, {}, "linux") == home / ".claude.json"
    assert resolve_path(APPS["claude"], None, home, {"CLAUDE_CONFIG_DIR": "/c"}, "linux") == Path("/c/.claude.json")
    assert resolve_path(APPS["claudeDesktop"], None, home, {}, "linux") == (
        home / ".config/Claude/claude_desktop_config.json"
    )
    assert resolve_path(APPS["claudeDesktop"], None, home, {"XDG_CONFIG_HOME": "/x"}, "linux") == Path(
        "/x/Claude/claude_desktop_config.json"
    )
    assert resolve_path(APPS["claudeDesktop"], None, home, {}, "darwin") == (
        home / "Library/Application Support/Claude/claude_desktop_config.json"
    )
    assert resolve_path(APPS["codex"], None, home, {}, "linux") == home / ".codex/config.toml"
    assert resolve_path(APPS["codex"], None, home, {"CODEX_HOME": "/cx"}, "linux") == Path("/cx/config.toml")
    assert resolve_path(APPS["gemini"], None, home, {}, "linux") == home / ".gemini/settings.json"
    assert resolve_path(APPS["cursor"], None, home, {}, "linux") == home / ".cursor/mcp.json"
    assert resolve_path(APPS["vscode"], None, home, {}, "linux") == home / ".config/Code/User/mcp.json"
    assert resolve_path(APPS["vscode"], None, home, {}, "darwin") == (
        home / "Library/Application Support/Code/User/mcp.json"
    )
    assert resolve_path(APPS["cursor"], "~/elsewhere.json", home, {}, "linux") == home / "elsewhere.json"
    with pytest.raises(AppError) as err:
        resolve_path(APPS["cursor"], "relative.json", home, {}, "linux")
    assert err.value.reason == "invalidParams"


# --- import ---------------------------------------------------------------------------------------------


def imported(app: str, home: Path, existing: dict[str, Any] | None = None, path: Path | None = None) -> Any:
    return plan_import(
        app, path=path, home=home, env={}, existing=existing or {}, policy=ConfigPolicy()  # type: ignore[arg-type]
    )


def reasons(plan: Any) -> dict[str, str]:
    return {s.name: s.reason for s in plan.skipped}


def read_entries(app: str, path: Path) -> dict[str, Any]:
    if app == "codex":
        return tomlkit.parse(path.read_text()).unwrap()["mcp_servers"]
    return json.loads(path.read_text())[SECTION[app]]


def test_import_claude_code(home: Path, data_dir: Path) -> None:
    path = write(
        home / ".claude.json",
        json.dumps(
            {
                "numStartups": 3,
                "mcpServers": {
                    "gh": {
                        "type": "stdio",
                        "command": "npx",
                        "args": ["-y", "gh-mcp"],
                        "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "LOG_LEVEL": "warn"},
                    },
                    "docs": {
                        "type": "http",
                        "url": "https://docs.example.com/mcp",
                        "headers": {"Authorization": "Bearer ${DOCS_TOKEN}", "X-Api-Key": "${DOCS_KEY}"},
                    },
                    "leaky": {"type": "http", "url": "https://a.example.com", "headers": {"Authorization": "Bearer s"}},
                    "old": {"type": "sse", "url": "https://sse.example.com"},
                    "plain": {"type": "http", "url": "http://example.com/mcp"},
                    "helper": {"type": "http", "url": "https://h.example.com", "headersHelper": "/bin/tok"},
                    "interp": {"command": "node", "args": ["${HOME}/s.js"]},
                    "renamed": {"command": "node", "env": {"TOKEN": "${GH_TOKEN}"}},
                    "bad.name": {"command": "node"},
                    "notobj": "node",
                },
            }
        ),
    )
    before = path.read_bytes()
    plan = imported("claude", home)
    assert plan.source == "import:claude"
    assert set(plan.to_create) == {"gh", "docs"}
    gh = plan.to_create["gh"]
    assert gh.env == {"LOG_LEVEL": "warn"} and gh.env_vars == ["GITHUB_TOKEN"] and gh.args == ["-y", "gh-mcp"]
    docs = plan.to_create["docs"]
    assert docs.bearer_token_env_var == "DOCS_TOKEN" and docs.env_headers == {"X-Api-Key": "DOCS_KEY"}
    assert docs.headers == {}
    assert reasons(plan) == {
        "leaky": "inlineSecret",
        "old": "unsupported",
        "plain": "insecureUrl",
        "helper": "unsupported",
        "interp": "unsupported",
        "renamed": "unsupported",
        "bad.name": "invalidServerName",
        "notobj": "invalidParams",
    }
    assert all("Bearer s" not in w for w in plan.warnings)
    assert path.read_bytes() == before
    assert not data_dir.exists()


def test_import_existing_identical_vs_different(home: Path) -> None:
    write(home / ".cursor/mcp.json", json.dumps({"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}))
    existing = {"a": cfg({"command": "x", "description": "mine"}), "b": cfg({"command": "other"})}
    plan = imported("cursor", home, existing)
    assert plan.to_create == {}
    assert reasons(plan) == {"a": "alreadyPresent", "b": "serverExists"}


def test_import_claude_desktop_takes_values_literally(home: Path) -> None:
    write(
        home / ".config/Claude/claude_desktop_config.json",
        json.dumps({"globalShortcut": "", "mcpServers": {"fs": {"command": "npx", "env": {"A": "${A}"}}}}),
    )
    plan = imported("claudeDesktop", home)
    assert plan.to_create["fs"].env == {"A": "${A}"}
    assert plan.to_create["fs"].env_vars == []


def test_import_codex(home: Path) -> None:
    write(
        home / ".codex/config.toml",
        """model = "o3"

[mcp_servers.docs]
url = "https://docs.example.com/mcp"
bearer_token_env_var = "DOCS_TOKEN"
env_http_headers = { "X-Api-Key" = "DOCS_KEY" }
http_headers = { "X-Title" = "app" }
startup_timeout_sec = 12.5
tool_timeout_sec = 90
enabled_tools = ["search"]
disabled_tools = ["delete"]

[mcp_servers.local]
command = "node"
args = ["s.js"]
env = { LOG_LEVEL = "warn" }
env_vars = ["GITHUB_TOKEN"]
cwd = "/srv"
enabled = false

[mcp_servers.leaky]
url = "https://x.example.com"
http_headers = { Authorization = "Bearer abc" }

[mcp_servers.weird]
command = "x"
[mcp_servers.weird.tools.search]
approval = "never"
""",
    )
    plan = imported("codex", home)
    docs = plan.to_create["docs"]
    assert docs.type == "http" and docs.bearer_token_env_var == "DOCS_TOKEN"
    assert docs.env_headers == {"X-Api-Key": "DOCS_KEY"} and docs.headers == {"X-Title": "app"}
    assert docs.startup_timeout_ms == 12500 and docs.tool_timeout_ms == 90000
    assert docs.enabled_tools == ["search"] and docs.disabled_tools == ["delete"]
    local = plan.to_create["local"]
    assert local.env_vars == ["GITHUB_TOKEN"] and local.cwd == "/srv" and local.enabled is False
    assert reasons(plan) == {"leaky": "inlineSecret", "weird": "unsupported"}


def test_import_gemini(home: Path) -> None:
    write(
        home / ".gemini/settings.json",
        json.dumps(
            {
                "theme": "GitHub",
                "mcpServers": {
                    "api": {
                        "httpUrl": "https://api.example.com/mcp",
                        "headers": {"Authorization": "Bearer $API_TOKEN", "X-Key": "${API_KEY}"},
                        "timeout": 5000,
                        "includeTools": ["a"],
                        "excludeTools": ["b"],
                        "trust": True,
                        "description": "the API",
                    },
                    "typed": {"url": "https://t.example.com/mcp", "type": "http", "oauth": {"scopes": ["read"]}},
                    "sse": {"url": "https://sse.example.com/sse"},
                    "slow": {"command": "node", "timeout": 600000},
                    "local": {"command": "python", "args": ["-m", "srv"], "env": {"TOKEN": "$TOKEN"}, "cwd": "/p"},
                    "secretid": {"httpUrl": "https://o.example.com", "oauth": {"clientId": "abc"}},
                },
            }
        ),
    )
    plan = imported("gemini", home)
    api = plan.to_create["api"]
    assert api.bearer_token_env_var == "API_TOKEN" and api.env_headers == {"X-Key": "API_KEY"}
    assert api.tool_timeout_ms == 5000 and api.enabled_tools == ["a"] and api.disabled_tools == ["b"]
    assert api.description == "the API"
    assert any("trust" in w for w in plan.warnings)
    assert plan.to_create["typed"].oauth is not None and plan.to_create["typed"].oauth.scopes == ["read"]
    assert plan.to_create["local"].env_vars == ["TOKEN"] and plan.to_create["local"].cwd == "/p"
    assert reasons(plan) == {"sse": "unsupported", "slow": "invalidParams"}
    assert plan.to_create["secretid"].oauth is not None and plan.to_create["secretid"].oauth.client_id == "abc"


def test_import_cursor(home: Path) -> None:
    write(
        home / ".cursor/mcp.json",
        json.dumps(
            {
                "mcpServers": {
                    "remote": {"url": "https://r.example.com/mcp", "headers": {"X-Api-Key": "${env:R_KEY}"}},
                    "local": {"command": "node", "env": {"TOKEN": "${env:TOKEN}"}},
                    "envfile": {"command": "node", "envFile": "/p/.env"},
                    "home": {"command": "${userHome}/bin/srv"},
                    "sse": {"type": "sse", "url": "https://s.example.com"},
                }
            }
        ),
    )
    plan = imported("cursor", home)
    assert plan.to_create["remote"].env_headers == {"X-Api-Key": "R_KEY"}
    assert plan.to_create["local"].env_vars == ["TOKEN"]
    assert reasons(plan) == {"envfile": "unsupported", "home": "unsupported", "sse": "unsupported"}


VSCODE_JSONC = """// VS Code user MCP servers
{
  "inputs": [
    {"type": "promptString", "id": "key", "password": true}, // prompt
  ],
  "servers": {
    /* a stdio server */
    "mem": {"type": "stdio", "command": "npx", "args": ["-y", "mem"], "cwd": "/w", "gallery": true},
    "gh": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${env:GH}"}},
    "prompted": {"type": "stdio", "command": "x", "env": {"KEY": "${input:key}"}},
    "sse": {"type": "sse", "url": "https://s.example.com"},
    "envfile": {"type": "stdio", "command": "x", "envFile": "${workspaceFolder}/.env"},
  },
}
"""


def test_import_vscode_jsonc(home: Path) -> None:
    write(home / ".config/Code/User/mcp.json", VSCODE_JSONC)
    plan = imported("vscode", home)
    assert plan.to_create["mem"].cwd == "/w" and plan.to_create["mem"].args == ["-y", "mem"]
    assert plan.to_create["gh"].bearer_token_env_var == "GH"
    assert reasons(plan) == {"prompted": "unsupported", "sse": "unsupported", "envfile": "unsupported"}


def test_import_missing_and_corrupted_files(home: Path, tmp_path: Path) -> None:
    with pytest.raises(AppError) as err:
        imported("gemini", home)
    assert err.value.reason == "unknownResource"
    write(home / ".gemini/settings.json", '{"mcpServers": {')
    with pytest.raises(AppError) as err:
        imported("gemini", home)
    assert err.value.reason == "invalidParams" and "line 1" in err.value.message
    write(home / ".codex/config.toml", "[mcp_servers.a\ncommand = 1")
    with pytest.raises(AppError) as err:
        imported("codex", home)
    assert err.value.reason == "invalidParams"
    other = write(tmp_path / "custom.json", json.dumps({"mcpServers": {"a": {"command": "x"}}}))
    assert set(imported("cursor", home, path=other).to_create) == {"a"}


# --- sync -----------------------------------------------------------------------------------------------

JSON_FIXTURES = {
    "claude": '{\n  "numStartups": 42,\n  "projects": {"/p": {"allowedTools": []}},\n'
    '  "mcpServers": {\n    "user-one": {"type": "stdio", "command": "mine", "args": []}\n  },\n'
    '  "tipsHistory": {"x": 1}\n}\n',
    "claudeDesktop": '{\n    "globalShortcut": "Alt+Space",\n    "mcpServers": {\n'
    '        "user-one": {"command": "mine", "args": []}\n    }\n}',
    "gemini": '{\n  "theme": "GitHub",\n  "mcpServers": {\n    "user-one": {"command": "mine"}\n  },\n'
    '  "selectedAuthType": "oauth-personal"\n}\n',
    "cursor": '{\n\t"mcpServers": {\n\t\t"user-one": { "command": "mine" }\n\t}\n}\n',
    "vscode": '// my MCP servers\n{\n  "inputs": [],  // none yet\n  "servers": {\n'
    '    // added by hand\n    "user-one": {"type": "stdio", "command": "mine",}, // trailing\n  },\n'
    '  /* keep me */ "other": true,\n}\n',
}

STDIO = {"command": "node", "args": ["server.mjs"], "envVars": ["GITHUB_TOKEN"]}
HTTP = {"type": "http", "url": "https://docs.example.com/mcp", "envHeaders": {"X-Api-Key": "DOCS_KEY"},
        "bearerTokenEnvVar": "DOCS_TOKEN"}  # fmt: skip


@pytest.mark.parametrize("app", JSON_APPS)
def test_sync_json_apps_preserve_everything_else(app: str, home: Path, data_dir: Path) -> None:
    section = SECTION[app]
    path = write(app_path(app, home), JSON_FIXTURES[app], mode=0o640)
    before = path.read_text()
    servers = {"ours": cfg({"command": "node", "args": ["s.mjs"]})}
    if app != "claudeDesktop":
        servers["env"] = cfg(STDIO)
        servers["docs"] = cfg(HTTP)

    result = do_sync(app, home, data_dir, servers)
    assert result.error is None, result.error
    assert result.changed and result.servers == sorted(servers)
    after = path.read_text()
    assert_outside_unchanged(before, after, section)
    start, end = section_span(before, section)
    first_entry = before[start:end].split('"user-one"', 1)[1]
    user_text = '"user-one"' + first_entry[: first_entry.index("}") + 1]
    assert user_text in after  # the user's entry keeps its bytes
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert result.backup_path and Path(result.backup_path).read_text() == before
    assert Path(result.backup_path).parent.parent == data_dir / "backups"
    entries = jsonc.parse(after).value[section]
    assert set(entries) == {"user-one", *servers}
    assert json.loads(json.dumps(entries["ours"]))["command"] == "node"
    ledger = json.loads((data_dir / LEDGER_FILE).read_text())
    assert set(next(iter(ledger["entries"].values()))) == set(servers)

    # Same servers again: nothing to do, no backup.
    again = do_sync(app, home, data_dir, servers)
    assert not again.changed and again.backup_path is None and path.read_text() == after

    # Drop everything: our entries go, the user's stays, the rest of the file is the original.
    removed = do_sync(app, home, data_dir, {})
    assert removed.changed and removed.servers == []
    final = path.read_text()
    assert jsonc.parse(final).value == jsonc.parse(before).value
    assert_outside_unchanged(before, final, section)
    assert final == before
    assert not json.loads((data_dir / LEDGER_FILE).read_text())["entries"]


DOLLAR_HEADERS = {"X-Api-Key": "${DOCS_KEY}", "Authorization": "Bearer ${DOCS_TOKEN}"}
ENV_HEADERS = {"X-Api-Key": "${env:DOCS_KEY}", "Authorization": "Bearer ${env:DOCS_TOKEN}"}


@pytest.mark.parametrize(
    ("app", "stdio_env", "headers"),
    [
        ("claude", {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}, DOLLAR_HEADERS),
        ("gemini", {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}, DOLLAR_HEADERS),
        ("cursor", {"GITHUB_TOKEN": "${env:GITHUB_TOKEN}"}, ENV_HEADERS),
        ("vscode", {"GITHUB_TOKEN": "${env:GITHUB_TOKEN}"}, ENV_HEADERS),
    ],
)
def test_sync_writes_each_apps_shape_with_env_references(
    app: str, stdio_env: dict[str, str], headers: dict[str, str], home: Path, data_dir: Path
) -> None:
    result = do_sync(app, home, data_dir, {"env": cfg(STDIO), "docs": cfg(HTTP)})
    assert result.error is None and result.backup_path is None  # a new file: nothing to back up
    path = app_path(app, home)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    entries = json.loads(path.read_text())[SECTION[app]]
    assert entries["env"]["env"] == stdio_env
    assert entries["docs"]["headers"] == headers
    url_key = "httpUrl" if app == "gemini" else "url"
    assert entries["docs"][url_key] == "https://docs.example.com/mcp"
    if app in ("claude", "vscode"):
        assert entries["docs"]["type"] == "http" and entries["env"]["type"] == "stdio"
    # Importing back gives the same servers.
    plan = imported(app, home, existing={"env": cfg(STDIO), "docs": cfg(HTTP)})
    assert reasons(plan) == {"env": "alreadyPresent", "docs": "alreadyPresent"}, plan.warnings


def test_sync_never_writes_literal_secrets(home: Path, data_dir: Path) -> None:
    servers = {
        "lit": cfg({"command": "node", "env": {"API_KEY": "sk-literal-secret"}}),
        "ok": cfg({"command": "node"}),
    }
    for app in ALL_APPS:
        result = do_sync(app, home, data_dir, servers)
        assert result.servers == ["ok"], app
        assert "sk-literal-secret" not in Path(result.path).read_text()
        assert any(w.startswith("lit: not synced") and "API_KEY" in w for w in result.warnings_)


def test_sync_writes_harmless_literals_as_they_are(home: Path, data_dir: Path) -> None:
    servers = {
        "hdr": cfg({"type": "http", "url": "https://h.example.com", "headers": {"X-Title": "literal-title"}}),
        "env": cfg({"command": "node", "env": {"LOG_LEVEL": "warn"}}),
    }
    for app in ALL_APPS:
        result = do_sync(app, home, data_dir, servers)
        expected = ["env"] if app == "claudeDesktop" else ["env", "hdr"]
        assert result.servers == expected, (app, result.warnings_)
        entries = read_entries(app, Path(result.path))
        assert entries["env"]["env"] == {"LOG_LEVEL": "warn"}
        if app != "claudeDesktop":
            headers = entries["hdr"]["http_headers" if app == "codex" else "headers"]
            assert headers == {"X-Title": "literal-title"}
        # Imported back, each is the same server.
        plan = imported(app, home, existing=servers)
        assert set(reasons(plan).values()) == {"alreadyPresent"}, plan.warnings


def test_sync_refuses_literals_the_app_would_expand(home: Path, data_dir: Path) -> None:
    servers = {"tpl": cfg({"command": "node", "env": {"GREETING": "${HOME}"}})}
    for app in ("claude", "cursor", "gemini"):
        result = do_sync(app, home, data_dir, servers)
        assert result.servers == [], app
        assert any("expand" in w for w in result.warnings_)


def test_sync_skips_what_an_app_cannot_express(home: Path, data_dir: Path) -> None:
    desktop = do_sync(
        "claudeDesktop", home, data_dir, {"env": cfg(STDIO), "docs": cfg(HTTP), "ok": cfg({"command": "n"})}
    )
    assert desktop.servers == ["ok"]
    assert len(desktop.warnings_) == 2
    filtered = {"f": cfg({"command": "n", "disabledTools": ["rm"]}), "c": cfg({"command": "n", "cwd": "/w"})}
    cursor = do_sync("cursor", home, data_dir, filtered)
    assert cursor.servers == []
    codex = do_sync("codex", home, data_dir, filtered)
    assert codex.servers == ["c", "f"]
    gemini = do_sync("gemini", home, data_dir, filtered)
    assert gemini.servers == ["c", "f"]
    origins = {
        "o": cfg(
            {"type": "http", "url": "https://o.example.com", "oauth": {"allowedOrigins": ["https://l.example.com"]}}
        )
    }
    assert do_sync("vscode", home, data_dir, origins).servers == []
    clients = {
        "p": cfg({"type": "http", "url": "https://p.example.com", "oauth": {"clientId": "app"}}),
        "m": cfg(
            {
                "type": "http",
                "url": "https://m.example.com",
                "oauth": {"grant": "clientCredentials", "clientId": "bot", "clientSecretEnvVar": "BOT_SECRET",
                          "expectedIssuer": "https://l.example.com"},
            }
        ),
    }
    assert do_sync("gemini", home, data_dir, clients).servers == []
    scopes = {"o": cfg({"type": "http", "url": "https://o.example.com", "oauth": {"scopes": ["read"]}})}
    claude = do_sync("claude", home, data_dir, scopes)
    assert claude.servers == ["o"] and any("scopes" in w for w in claude.warnings_)
    gem = do_sync("gemini", home, data_dir, scopes)
    assert json.loads(Path(gem.path).read_text())["mcpServers"]["o"]["oauth"] == {"enabled": True, "scopes": ["read"]}


def test_sync_dry_run_writes_nothing(home: Path, data_dir: Path) -> None:
    path = write(app_path("cursor", home), JSON_FIXTURES["cursor"])
    before = path.read_bytes()
    result = do_sync("cursor", home, data_dir, {"ours": cfg({"command": "n"})}, dry_run=True)
    assert result.changed and result.servers == ["ours"] and result.backup_path is None
    assert path.read_bytes() == before
    assert not data_dir.exists()
    missing = do_sync("gemini", home, data_dir, {"ours": cfg({"command": "n"})}, dry_run=True)
    assert missing.changed and not app_path("gemini", home).exists()
    do_sync("cursor", home, data_dir, {"ours": cfg({"command": "n"})})
    written = path.read_bytes()
    ledger = (data_dir / LEDGER_FILE).read_bytes()
    removal = do_sync("cursor", home, data_dir, {}, dry_run=True)
    assert removal.changed and removal.backup_path is None
    assert path.read_bytes() == written and (data_dir / LEDGER_FILE).read_bytes() == ledger


@pytest.mark.parametrize("app", ALL_APPS)
def test_sync_reports_corrupted_files_and_leaves_them(app: str, home: Path, data_dir: Path) -> None:
    broken = "[mcp_servers\nx = " if app == "codex" else '{"mcpServers": {"a": 1,,}'
    path = write(app_path(app, home), broken)
    result = do_sync(app, home, data_dir, {"ours": cfg({"command": "n"})})
    assert result.error is not None and result.error.reason == "parseError"
    assert not result.changed and result.backup_path is None
    assert path.read_text() == broken
    assert not (data_dir / "backups").exists()


def test_sync_reports_wrong_shape(home: Path, data_dir: Path) -> None:
    path = write(app_path("claude", home), '{"mcpServers": []}')
    result = do_sync("claude", home, data_dir, {"ours": cfg({"command": "n"})})
    assert result.error is not None and result.error.reason == "parseError"
    assert path.read_text() == '{"mcpServers": []}'
    write(app_path("cursor", home), "[1, 2]")
    assert do_sync("cursor", home, data_dir, {"a": cfg({"command": "n"})}).error is not None


def test_sync_leaves_user_entries_and_user_edits(home: Path, data_dir: Path) -> None:
    path = write(app_path("claude", home), json.dumps({"mcpServers": {"same": {"command": "user"}}}, indent=2))
    first = do_sync("claude", home, data_dir, {"same": cfg({"command": "n"}), "ours": cfg({"command": "n"})})
    assert first.servers == ["ours"]
    assert any("same: not synced" in w for w in first.warnings_)
    data = json.loads(path.read_text())
    assert data["mcpServers"]["same"] == {"command": "user"}

    # The user edits our entry: it becomes theirs, and is neither rewritten nor removed.
    data["mcpServers"]["ours"]["args"] = ["--debug"]
    path.write_text(json.dumps(data, indent=2))
    second = do_sync("claude", home, data_dir, {"ours": cfg({"command": "n", "args": ["x"]})})
    assert second.servers == [] and not second.changed
    third = do_sync("claude", home, data_dir, {})
    assert not third.changed
    assert json.loads(path.read_text())["mcpServers"]["ours"]["args"] == ["--debug"]


def test_sync_rewrites_changed_server_and_readds_deleted(home: Path, data_dir: Path) -> None:
    path = app_path("vscode", home)
    do_sync("vscode", home, data_dir, {"a": cfg({"command": "one"})})
    changed = do_sync("vscode", home, data_dir, {"a": cfg({"command": "two"})})
    assert changed.changed and json.loads(path.read_text())["servers"]["a"]["command"] == "two"
    path.write_text('{"servers": {}}')
    readded = do_sync("vscode", home, data_dir, {"a": cfg({"command": "two"})})
    assert readded.changed and json.loads(path.read_text())["servers"]["a"]["command"] == "two"


CODEX_FIXTURE = """# Codex settings
model = "o3"  # the default model
approval_policy = "on-request"

[mcp_servers.user_one]
command = "mine"   # my own server
args = ["--flag"]

[profiles.fast]
model = "o4-mini"
"""


def test_sync_codex_round_trips_toml(home: Path, data_dir: Path) -> None:
    path = write(app_path("codex", home), CODEX_FIXTURE, mode=0o600)
    servers = {
        "env": cfg({**STDIO, "cwd": "/srv", "startupTimeoutMs": 12500}),
        "docs": cfg({**HTTP, "enabledTools": ["search"], "toolTimeoutMs": 60000}),
    }
    result = do_sync("codex", home, data_dir, servers)
    assert result.error is None and result.changed and result.servers == ["docs", "env"]
    text = path.read_text()
    assert text.startswith(CODEX_FIXTURE.split("[profiles.fast]")[0])
    assert '[profiles.fast]\nmodel = "o4-mini"\n' in text
    data = tomlkit.parse(text).unwrap()
    assert data["mcp_servers"]["env"] == {
        "command": "node",
        "args": ["server.mjs"],
        "env_vars": ["GITHUB_TOKEN"],
        "cwd": "/srv",
        "startup_timeout_sec": 12.5,
    }  # the tool timeout the user never set is left to Codex's own default
    assert data["mcp_servers"]["docs"] == {
        "url": "https://docs.example.com/mcp",
        "bearer_token_env_var": "DOCS_TOKEN",
        "env_http_headers": {"X-Api-Key": "DOCS_KEY"},
        "tool_timeout_sec": 60,
        "enabled_tools": ["search"],
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert Path(result.backup_path).read_text() == CODEX_FIXTURE
    plan = imported("codex", home, existing=servers)
    assert reasons(plan) == {"env": "alreadyPresent", "docs": "alreadyPresent"}
    assert set(plan.to_create) == {"user_one"}

    removed = do_sync("codex", home, data_dir, {})
    assert removed.changed
    final = path.read_text()
    assert "[mcp_servers.env]" not in final and "[mcp_servers.docs]" not in final
    assert final.startswith(CODEX_FIXTURE.split("[profiles.fast]")[0])
    assert final == CODEX_FIXTURE


def test_sync_codex_creates_file_with_codex_home(tmp_path: Path, data_dir: Path) -> None:
    codex_home = tmp_path / "cx"
    result = sync_app(
        "codex",
        path=None,
        home=tmp_path,
        env={"CODEX_HOME": str(codex_home)},
        servers={"a": cfg({"command": "n"})},
        data_dir=data_dir,
        dry_run=False,
    )
    assert result.path == str(codex_home / "config.toml") and result.changed
    assert tomlkit.parse((codex_home / "config.toml").read_text()).unwrap()["mcp_servers"]["a"]["command"] == "n"


def test_sync_follows_symlinks_and_uses_path_override(home: Path, tmp_path: Path, data_dir: Path) -> None:
    real = write(tmp_path / "dotfiles/cursor.json", '{"x": 1}\n')
    link = home / ".cursor/mcp.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    result = do_sync("cursor", home, data_dir, {"a": cfg({"command": "n"})})
    assert result.changed and link.is_symlink()
    assert json.loads(real.read_text())["mcpServers"]["a"] == {"command": "n", "args": []}
    custom = tmp_path / "custom/mcp.json"
    other = sync_app(
        "vscode", path=custom, home=home, env={}, servers={"a": cfg({"command": "n"})}, data_dir=data_dir, dry_run=False
    )
    assert other.path == str(custom) and json.loads(custom.read_text())["servers"]["a"]["type"] == "stdio"


def test_backups_are_bounded(home: Path, data_dir: Path) -> None:
    write(app_path("cursor", home), "{}")
    for index in range(13):
        do_sync("cursor", home, data_dir, {f"s{index}": cfg({"command": "n"})})
    backups = list((data_dir / "backups/cursor").iterdir())
    assert len(backups) == 10
    assert all(stat.S_IMODE(b.stat().st_mode) == 0o600 for b in backups)


def test_corrupted_ledger_fails_closed(home: Path, data_dir: Path) -> None:
    path = write(app_path("cursor", home), "{}")
    data_dir.mkdir()
    (data_dir / LEDGER_FILE).write_text("not json")
    result = do_sync("cursor", home, data_dir, {"a": cfg({"command": "n"})})
    assert result.error is not None and result.error.reason == "storeCorrupted"
    assert path.read_text() == "{}"


def test_disabled_servers_are_not_written(home: Path, data_dir: Path) -> None:
    result = do_sync("gemini", home, data_dir, {"off": cfg({"command": "n", "enabled": False})})
    assert result.servers == [] and not result.changed and not app_path("gemini", home).exists()


# --- the JSONC span editor --------------------------------------------------------------------------------


def test_jsonc_edits_keep_neighbours_byte_for_byte() -> None:
    text = '{\n  "a": 1, // one\n  "m": {\n    "u": {"k": [1,2,]}, /* u */\n  },\n  "z": "\\u00e9",\n}\n'
    added = jsonc.set_member(text, ("m",), "new", {"command": "x"})
    assert '"u": {"k": [1,2,]}, /* u */' in added and '"a": 1, // one' in added
    assert jsonc.parse(added).value["m"]["new"] == {"command": "x"}
    assert jsonc.remove_member(added, ("m",), "new") == text
    replaced = jsonc.set_member(added, ("m",), "new", {"command": "y"})
    assert jsonc.parse(replaced).value["m"]["new"] == {"command": "y"}
    inline = jsonc.set_member('{"a": {"b": 1}}', ("a",), "c", 2)
    assert inline == '{"a": {"b": 1, "c": 2}}'
    assert jsonc.remove_member(inline, ("a",), "b") == '{"a": {"c": 2}}'
    assert jsonc.remove_member(inline, ("a",), "c") == '{"a": {"b": 1}}'
    crlf = '{\r\n  "x": 1\r\n}\r\n'
    assert jsonc.set_member(crlf, ("m",), "k", 1) == '{\r\n  "x": 1,\r\n  "m": {\r\n    "k": 1\r\n  }\r\n}\r\n'
    for bad in ['{"a": 1', '{"a" 1}', "{/* x", '{"a": tru}', '{"a": 1} x', '{"a": "\\q"}', '{"a": 01}']:
        with pytest.raises(jsonc.JsoncError):
            jsonc.parse(bad)


def test_import_and_sync_never_touch_real_home(home: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/nonexistent-real-home")
    result = do_sync("cursor", home, data_dir, {"a": cfg({"command": "n"})})
    assert result.path.startswith(str(home)) and os.path.exists(result.path)


# --- fidelity: meaning, defaults, project scope -----------------------------------------------------------


def test_sync_compares_entries_by_meaning(home: Path, data_dir: Path) -> None:
    # The user's own entry spelled differently ("env": {}, another key order) is the same server: in sync.
    user = {"mcpServers": {"same": {"env": {}, "args": [], "command": "n", "type": "stdio"}}}
    path = write(app_path("claude", home), json.dumps(user, indent=2))
    first = do_sync("claude", home, data_dir, {"same": cfg({"command": "n"})})
    assert first.servers == ["same"] and not first.changed and first.warnings_ == []
    assert json.loads(path.read_text()) == user

    # Our own entry reformatted by the user (same meaning) is still ours: rewritten when the server changes.
    do_sync("claude", home, data_dir, {"ours": cfg({"command": "n", "args": ["a"]})})
    data = json.loads(path.read_text())
    data["mcpServers"]["ours"] = {"args": ["a"], "command": "n", "env": {}}
    path.write_text(json.dumps(data))
    changed = do_sync("claude", home, data_dir, {"ours": cfg({"command": "n", "args": ["b"]})})
    assert changed.changed and changed.warnings_ == []
    assert json.loads(path.read_text())["mcpServers"]["ours"]["args"] == ["b"]
    removed = do_sync("claude", home, data_dir, {})
    assert removed.changed and "ours" not in json.loads(path.read_text())["mcpServers"]


def test_sync_writes_no_daemon_defaults(home: Path, data_dir: Path) -> None:
    unset = {"u": cfg({"command": "n"}), "w": cfg({"type": "http", "url": "https://w.example.com/mcp"})}
    codex = do_sync("codex", home, data_dir, unset)
    entries = read_entries("codex", Path(codex.path))
    assert entries["u"] == {"command": "n", "args": []}
    assert entries["w"] == {"url": "https://w.example.com/mcp"}
    gemini = do_sync("gemini", home, data_dir, unset)
    assert "timeout" not in read_entries("gemini", Path(gemini.path))["u"]

    # Set by the user — even to the daemon's default value — they are written.
    chosen = {"u": cfg({"command": "n", "startupTimeoutMs": 30000, "toolTimeoutMs": 90000})}
    codex = do_sync("codex", home, data_dir, chosen)
    assert read_entries("codex", Path(codex.path))["u"] == {
        "command": "n", "args": [], "startup_timeout_sec": 30, "tool_timeout_sec": 90,
    }  # fmt: skip
    gemini = do_sync("gemini", home, data_dir, chosen)
    assert read_entries("gemini", Path(gemini.path))["u"]["timeout"] == 90000


def test_import_claude_code_project_scope(home: Path) -> None:
    write(home / ".claude.json", json.dumps({
        "mcpServers": {"shared": {"command": "user-one"}},
        "projects": {
            "/work/a": {"mcpServers": {"alpha": {"command": "a"}, "shared": {"command": "project-one"}}},
            "/work/b": {"mcpServers": {"alpha": {"command": "b"}, "beta": {"type": "http", "url": "https://b.example.com"}}},
            "/work/c": {"allowedTools": []},
        },
    }))  # fmt: skip
    plan = imported("claude", home)
    assert set(plan.to_create) == {"shared", "alpha", "beta"}
    assert plan.to_create["shared"].command == "user-one"
    assert plan.to_create["alpha"].command == "a"
    assert [(s.name, s.reason) for s in plan.skipped] == [("shared", "nameConflict"), ("alpha", "nameConflict")]
    assert any("/work/a" in w and "shared" in w for w in plan.warnings)
    assert any("/work/b" in w and "alpha" in w for w in plan.warnings)
