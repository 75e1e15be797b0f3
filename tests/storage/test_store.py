"""Black-box tests of the server store through the daemon: rules, revisions, redaction, durability."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import Daemon, DaemonError, running_daemon

pytestmark = pytest.mark.daemon

STDIO = {"command": "node", "args": ["server.mjs"], "env": {"LOG_LEVEL": "warn", "API_TOKEN": "sk-live-123"}}
HTTP = {"type": "http", "url": "https://docs.example.com/mcp", "headers": {"X-Title": "app"},
        "envHeaders": {"X-Api-Key": "DOCS_API_KEY"}, "bearerTokenEnvVar": "DOCS_TOKEN"}


def error_of(daemon: Daemon, method: str, params: dict[str, Any]) -> DaemonError:
    with pytest.raises(DaemonError) as err:
        daemon.request(method, params)
    return err.value


def test_create_list_redacts_secrets_and_persists(data_dir: Path) -> None:
    with running_daemon(data_dir) as d:
        d.initialize()
        created = d.request("mcpServer/create", {"name": "local", "config": STDIO})["server"]
        assert created["revision"] == 1 and created["source"] == "user" and created["enabled"] is True
        d.request("mcpServer/create", {"name": "docs", "config": HTTP})
        listed = d.request("mcpServer/list")["data"]
        assert [s["name"] for s in listed] == ["docs", "local"]
        text = json.dumps(listed)
        assert "sk-live-123" not in text and "warn" not in text and '"app"' not in text
        assert listed[0]["config"]["envHeaders"] == {"X-Api-Key": "DOCS_API_KEY"}
    stored = json.loads((data_dir / "mcps.json").read_text())
    assert stored["version"] == 1
    assert stored["mcpServers"]["local"]["env"]["API_TOKEN"] == "sk-live-123"
    assert (data_dir / "mcps.json").stat().st_mode & 0o777 == 0o600
    with running_daemon(data_dir) as d:
        d.initialize()
        assert [s["name"] for s in d.request("mcpServer/list")["data"]] == ["docs", "local"]
    assert "sk-live-123" not in (data_dir.parent / "data.stderr.log").read_text()


@pytest.mark.parametrize(
    ("config", "code", "reason"),
    [
        ({"type": "http", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer abc"}}, -32012,
         "inlineSecret"),
        ({"type": "http", "url": "https://x.example/mcp", "headers": {"Host": "x"}}, -32012, "reservedHeader"),
        ({"type": "http", "url": "https://x.example/mcp", "headers": {"X-A": "a\nb"}}, -32012, "invalidHeader"),
        ({"type": "http", "url": "http://x.example/mcp"}, -32012, "insecureUrl"),
        ({"type": "http", "url": "https://x.example/mcp", "oauth": {}, "bearerTokenEnvVar": "T"}, -32012,
         "oauthHeaderConflict"),
        ({"type": "http", "url": "https://x.example/mcp", "oauth": {"resource": "https://x.example"}}, -32012,
         "unsupported"),
        ({"type": "http", "url": "https://x.example/mcp", "oauth": {"clientId": "c", "clientSecret": "s"}}, -32012,
         "inlineSecret"),
        ({"command": "node", "url": "https://x.example"}, -32602, "invalidParams"),
    ],
)
def test_policy_errors_are_typed_and_nothing_is_written(daemon: Daemon, data_dir: Path, config: dict[str, Any],
                                                        code: int, reason: str) -> None:
    err = error_of(daemon, "mcpServer/create", {"name": "bad", "config": config})
    assert (err.code, err.reason) == (code, reason)
    assert "Bearer abc" not in json.dumps(err.data) + err.message
    assert daemon.request("mcpServer/list") == {"data": []}
    assert not (data_dir / "mcps.json").exists()


def test_invalid_name_and_duplicates(daemon: Daemon) -> None:
    assert error_of(daemon, "mcpServer/create", {"name": "a__b", "config": STDIO}).reason == "invalidServerName"
    daemon.request("mcpServer/create", {"name": "a", "config": STDIO})
    err = error_of(daemon, "mcpServer/create", {"name": "a", "config": STDIO})
    assert (err.code, err.reason) == (-32011, "serverExists")


def test_update_revisions_and_mismatch(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "a", "config": STDIO})
    updated = daemon.request("mcpServer/update", {"name": "a", "config": {"command": "other"}, "expectedRevision": 1})
    assert updated["server"]["revision"] == 2 and updated["server"]["config"]["command"] == "other"
    err = error_of(daemon, "mcpServer/update", {"name": "a", "config": {"command": "x"}, "expectedRevision": 1})
    assert (err.code, err.reason) == (-32011, "revisionMismatch")
    assert err.data["revision"] == 2
    assert daemon.request("mcpServer/list")["data"][0]["config"]["command"] == "other"
    assert error_of(daemon, "mcpServer/update", {"name": "nope", "config": STDIO}).reason == "unknownServer"


def test_enabled_set_for_daemon_and_for_sync_target(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "a", "config": STDIO})
    server = daemon.request("mcpServer/enabled/set", {"name": "a", "enabled": False})["server"]
    assert server["enabled"] is False and server["revision"] == 2
    server = daemon.request("mcpServer/enabled/set", {"name": "a", "enabled": True, "app": "codex"})["server"]
    assert server["enabled"] is False and server["config"]["apps"] == {"codex": True}
    assert error_of(daemon, "mcpServer/enabled/set", {"name": "a", "enabled": True, "app": "emacs"}).reason == (
        "invalidParams"
    )


def test_delete(daemon: Daemon) -> None:
    daemon.request("mcpServer/create", {"name": "a", "config": STDIO})
    assert daemon.request("mcpServer/delete", {"name": "a"}) == {}
    assert daemon.request("mcpServer/list") == {"data": []}
    assert error_of(daemon, "mcpServer/delete", {"name": "a"}).reason == "unknownServer"


def test_32_server_limit(daemon: Daemon) -> None:
    for i in range(32):
        daemon.request("mcpServer/create", {"name": f"s{i}", "config": {"command": "x"}})
    err = error_of(daemon, "mcpServer/create", {"name": "s32", "config": {"command": "x"}})
    assert (err.code, err.reason) == (-32013, "tooManyServers")
    assert len(daemon.request("mcpServer/list", {"limit": 1000})["data"]) == 32


def test_256_kib_limit(daemon: Daemon, data_dir: Path) -> None:
    big = {"command": "x", "args": ["y" * 60_000]}
    for i in range(4):
        daemon.request("mcpServer/create", {"name": f"s{i}", "config": big})
    before = (data_dir / "mcps.json").read_bytes()
    err = error_of(daemon, "mcpServer/create", {"name": "s4", "config": big})
    assert (err.code, err.reason) == (-32013, "configTooLarge")
    assert (data_dir / "mcps.json").read_bytes() == before


def test_paging(daemon: Daemon) -> None:
    for i in range(5):
        daemon.request("mcpServer/create", {"name": f"s{i}", "config": {"command": "x"}})
    first = daemon.request("mcpServer/list", {"limit": 2})
    assert [s["name"] for s in first["data"]] == ["s0", "s1"]
    second = daemon.request("mcpServer/list", {"limit": 2, "cursor": first["nextCursor"]})
    assert [s["name"] for s in second["data"]] == ["s2", "s3"]
    last = daemon.request("mcpServer/list", {"limit": 2, "cursor": second["nextCursor"]})
    assert [s["name"] for s in last["data"]] == ["s4"] and "nextCursor" not in last
    assert error_of(daemon, "mcpServer/list", {"cursor": "garbage"}).reason == "invalidParams"


def test_corrupted_store_is_never_overwritten_and_recovers(data_dir: Path) -> None:
    store = data_dir / "mcps.json"
    store.write_text('{"version": 1, "mcpServers": {"a": {"command": "x"}')
    corrupted = store.read_bytes()
    with running_daemon(data_dir) as d:
        d.initialize()
        err = error_of(d, "mcpServer/create", {"name": "b", "config": STDIO})
        assert err.reason == "storeCorrupted"
        assert error_of(d, "mcpServer/list", {}).reason == "storeCorrupted"
        assert store.read_bytes() == corrupted
        store.write_text(json.dumps({"version": 1, "mcpServers": {"a": {"command": "x"}}}))
        os.utime(store, ns=(1, 1))
        assert [s["name"] for s in d.request("mcpServer/list")["data"]] == ["a"]
        d.request("mcpServer/create", {"name": "b", "config": STDIO})
    assert set(json.loads(store.read_text())["mcpServers"]) == {"a", "b"}


def test_store_with_an_invalid_entry_is_read_only(data_dir: Path) -> None:
    store = data_dir / "mcps.json"
    store.write_text(json.dumps({"version": 1, "mcpServers": {"a": {"type": "http", "url": "http://evil.example"}}}))
    with running_daemon(data_dir) as d:
        d.initialize()
        err = error_of(d, "mcpServer/delete", {"name": "a"})
        assert err.reason == "storeCorrupted" and "insecureUrl" in err.message


def test_data_dir_from_environment(tmp_path: Path) -> None:
    home = tmp_path / "home"
    d = Daemon.__new__(Daemon)
    del d
    import subprocess
    import sys

    from testing.daemon_client import ROOT

    out = subprocess.run(
        [sys.executable, "-m", "app_server"],
        input=b'{"id":1,"method":"initialize","params":{"clientInfo":{"name":"t","version":"1"}}}\n',
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "MCP_APP_SERVER_HOME": str(home)},
        timeout=30,
        check=True,
    )
    assert json.loads(out.stdout)["result"]["dataDir"] == str(home)
