"""The MCP Registry through the real daemon (SPEC §15): search and get against a loopback registry speaking
``v0.1`` with real ``server.json`` documents, installs that run, and the cache served ``stale`` offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testing.daemon_client import DaemonError, running_daemon

pytestmark = pytest.mark.daemon

EVERYTHING = "io.github.modelcontextprotocol/everything"
ROOT = Path(__file__).resolve().parents[2]
PINNED = json.loads((ROOT / "package.json").read_text())["dependencies"]["@modelcontextprotocol/server-everything"]


def test_search_lists_active_valid_latest_entries(data_dir: Path, registry_url: str) -> None:
    with running_daemon(data_dir, args=("--registry-url", registry_url)) as d:
        d.initialize()
        found = d.request("mcpServer/registry/search", {})
        names = {row["name"]: row for row in found["data"]}
        assert found["stale"] is False
        assert "io.github.user/remote-weather" in names and "io.github.user/local-weather" in names
        assert "io.github.user/bad-version" not in names  # the registry's invalid example: version "latest"
        assert "no-namespace-separator" not in names  # the registry's invalid example: bad name
        assert "io.github.example/gone" not in names  # deleted
        assert names[EVERYTHING]["version"] == PINNED and names[EVERYTHING]["kinds"] == ["npm", "pypi", "oci"]
        assert names["io.github.user/remote-weather"]["icons"][0]["src"] == "https://example.com/icon.png"
        assert names[EVERYTHING]["installedAs"] is None
        first = d.request("mcpServer/registry/search", {"limit": 2})
        second = d.request("mcpServer/registry/search", {"limit": 2, "cursor": first["nextCursor"]})
        assert {r["name"] for r in first["data"]}.isdisjoint({r["name"] for r in second["data"]})


def test_get_gives_options_with_typed_inputs_and_refuses_an_invalid_entry(data_dir: Path, registry_url: str) -> None:
    with running_daemon(data_dir, args=("--registry-url", registry_url)) as d:
        d.initialize()
        entry = d.request("mcpServer/registry/get", {"name": "io.github.user/local-weather"})
        (option,) = entry["installOptions"]
        assert option["kind"] == "npm" and option["option"] == "package:0"
        inputs = {i["key"]: i for i in option["inputs"]}
        assert inputs["API_KEY"]["secret"] is True and inputs["API_KEY"]["required"] is True
        assert "config_path" in inputs and "--port" not in inputs  # a fixed value is not asked for
        remote = d.request("mcpServer/registry/get", {"name": "io.github.user/remote-weather"})["installOptions"][0]
        assert remote["kind"] == "remote" and {i["key"] for i in remote["inputs"]} == {"host", "Authorization"}
        with pytest.raises(DaemonError) as bad:
            d.request("mcpServer/registry/get", {"name": "io.github.user/bad-version"})
        assert bad.value.reason == "invalidParams" and bad.value.data["errors"]
        with pytest.raises(DaemonError) as unknown:
            d.request("mcpServer/registry/get", {"name": "io.github.user/nothing-here"})
        assert unknown.value.reason == "unknownRegistryEntry" and unknown.value.code == -32010


def test_an_npm_entry_installs_and_runs(data_dir: Path, registry_url: str) -> None:
    with running_daemon(data_dir, args=("--registry-url", registry_url)) as d:
        d.initialize()
        source = {"registry": {"name": EVERYTHING, "option": "package:0"}}
        with pytest.raises(DaemonError) as invalid:
            d.request("mcpServer/install", {"name": "every", "source": source, "inputs": {"LOG_LEVEL": "loud"}})
        assert invalid.value.reason == "invalidInput" and invalid.value.data["input"] == "LOG_LEVEL"
        inputs = {"EVERYTHING_TOKEN": "tok-secret-123"}
        row = d.request("mcpServer/install", {"name": "every", "source": source, "inputs": inputs})["server"]
        assert row["source"] == f"registry:{EVERYTHING}@{PINNED}"
        assert row["config"]["command"] == "npx"
        assert row["config"]["args"] == ["-y", f"@modelcontextprotocol/server-everything@{PINNED}"]
        assert row["config"]["env"] == {"EVERYTHING_TOKEN": "***", "LOG_LEVEL": "***"}  # every env value reads "***"
        assert row["installedFrom"] == {
            "registry": registry_url, "name": EVERYTHING, "version": PINNED, "updateAvailable": False,
        }  # fmt: skip
        started = d.request("mcpServer/start", {"name": "every"}, timeout=60)
        assert started["status"]["runtimeStatus"] == "connected", started
        tools = d.request("mcpTool/list", {"server": "every"})["data"]
        assert "echo" in {t["tool"] for t in tools}
        thread = d.request("thread/start", {"servers": ["every"]})["thread"]["id"]
        call = {"threadId": thread, "server": "every", "tool": "echo", "arguments": {"message": "from the registry"}}
        result = d.request("mcpServer/tool/call", call, timeout=60)
        assert "from the registry" in json.dumps(result)
        found = d.request("mcpServer/registry/search", {"query": "everything"})["data"]
        assert found[0]["installedAs"] == "every"
        assert "tok-secret-123" not in d.stderr()


def test_an_older_install_says_an_update_is_available(data_dir: Path, registry_url: str) -> None:
    with running_daemon(data_dir, args=("--registry-url", registry_url)) as d:
        d.initialize()
        source = {"registry": {"name": EVERYTHING, "version": "2025.1.1", "option": "package:0"}}
        d.request("mcpServer/install", {"name": "old", "source": source, "enabled": False})
        d.request("mcpServer/registry/search", {})
        (row,) = d.request("mcpServer/list", {"names": ["old"]})["data"]
        assert row["installedFrom"]["version"] == "2025.1.1" and row["installedFrom"]["updateAvailable"] is True


def test_a_remote_entry_installs_as_http_and_runs(data_dir: Path, registry_url: str, remote_url: str) -> None:
    with running_daemon(data_dir, args=("--registry-url", registry_url)) as d:
        d.initialize()
        source = {"registry": {"name": "io.github.example/loopback-headers", "option": "remote:0"}}
        with pytest.raises(DaemonError) as missing:
            d.request("mcpServer/install", {"name": "remote", "source": source})
        assert missing.value.reason == "missingInput" and missing.value.data["input"] == "X-Workspace"
        params = {"name": "remote", "source": source, "inputs": {"X-Workspace": "team-a"}}
        row = d.request("mcpServer/install", params)["server"]
        assert row["config"] == {"type": "http", "url": remote_url, "headers": {"X-Workspace": "***"}}
        assert d.request("mcpServer/start", {"name": "remote"}, timeout=60)["status"]["runtimeStatus"] == "connected"
        sse = {"registry": {"name": "io.github.example/sse-only", "option": "remote:0"}}
        with pytest.raises(DaemonError) as unsupported:
            d.request("mcpServer/install", {"name": "sse", "source": sse})
        assert unsupported.value.reason == "unsupported"


def test_pypi_oci_and_nuget_become_argv_never_a_shell(data_dir: Path, registry_url: str) -> None:
    with running_daemon(data_dir, args=("--registry-url", registry_url)) as d:
        d.initialize()
        pypi = {"registry": {"name": EVERYTHING, "option": "package:1"}}
        oci = {"registry": {"name": EVERYTHING, "option": "package:2"}}
        inputs = {"EVERYTHING_TOKEN": "t; rm -rf ~"}
        py = d.request("mcpServer/install", {"name": "py", "source": pypi, "enabled": False})["server"]["config"]
        assert py["command"] == "uvx" and py["args"] == [f"mcp-server-everything-py=={PINNED}"]
        row = d.request("mcpServer/install", {"name": "box", "source": oci, "inputs": inputs, "enabled": False})
        box = row["server"]["config"]
        image = f"ghcr.io/modelcontextprotocol/everything:{PINNED}"
        assert box["command"] == "docker" and box["args"] == ["run", "-i", "--rm", "-e", "EVERYTHING_TOKEN", image]


def test_offline_the_cache_answers_stale_and_nothing_cached_is_registry_unavailable(
    data_dir: Path, remote_url: str
) -> None:
    from scripts.smoke.fixtures.launch import http_script

    with http_script("registry_server.py", "--remote-url", remote_url) as url:
        with running_daemon(data_dir, args=("--registry-url", url)) as d:
            d.initialize()
            fresh = d.request("mcpServer/registry/search", {})
            d.request("mcpServer/registry/get", {"name": EVERYTHING})
    with running_daemon(data_dir, args=("--registry-url", url)) as d:  # the registry is gone now
        d.initialize()
        stale = d.request("mcpServer/registry/search", {})
        assert stale["stale"] is True and stale["data"] == fresh["data"]
        assert d.request("mcpServer/registry/get", {"name": EVERYTHING})["stale"] is True
        with pytest.raises(DaemonError) as unavailable:
            d.request("mcpServer/registry/search", {"query": "never-asked"})
        assert unavailable.value.reason == "registryUnavailable" and unavailable.value.code == -32014
        assert unavailable.value.data["url"] == url
        cache = data_dir / "registry-cache"
        assert all((p.stat().st_mode & 0o777) == 0o600 for p in cache.iterdir())

        source = {"registry": {"name": EVERYTHING, "option": "package:0"}}  # installs from the cached entry
        row = d.request("mcpServer/install", {"name": "every", "source": source, "enabled": False})["server"]
        assert row["source"] == f"registry:{EVERYTHING}@{PINNED}" and row["installedFrom"]["updateAvailable"] is False
        for spoilt in cache.iterdir():  # a cache file that is not what the daemon wrote: typed, never a crash
            spoilt.write_text("[1, 2]")
        with pytest.raises(DaemonError) as unreadable:
            d.request("mcpServer/registry/search", {})
        assert unreadable.value.reason == "registryUnavailable"
        assert [s["name"] for s in d.request("mcpServer/list", {})["data"]] == ["every"]


def test_a_redirect_is_never_followed(data_dir: Path, registry_url: str) -> None:
    with running_daemon(data_dir, args=("--registry-url", registry_url)) as d:
        d.initialize()
        with pytest.raises(DaemonError) as refused:
            d.request("mcpServer/registry/get", {"name": "io.github.example/redirect"})
        assert refused.value.reason == "registryUnavailable" and "302" in refused.value.data["detail"]


@pytest.mark.parametrize("url", ["http://registry.example.com", "ftp://127.0.0.1", "https://user@registry.example.com"])
def test_a_registry_url_that_is_not_https_or_loopback_is_a_usage_error(data_dir: Path, url: str) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "app_server", "--data-dir", str(data_dir), "--registry-url", url],
        input=b"", capture_output=True, timeout=30, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 2 and b"--registry-url" in done.stderr


def test_an_option_that_would_put_a_secret_in_argv_or_a_url_is_not_runnable_and_never_installed(
    data_dir: Path, registry_url: str
) -> None:
    """SPEC §14: a secret is never in a child's argv (every user reads it) nor in a config's URL (shown in every
    response); ``server.json`` gives such an argument no other way to the server, so the option is refused."""
    secret = "sk-argv-secret-4242"
    name = "io.github.example/secret-arguments"
    with running_daemon(data_dir, args=("--registry-url", registry_url)) as d:
        d.initialize()
        options = {o["option"]: o for o in d.request("mcpServer/registry/get", {"name": name})["installOptions"]}
        exposed = {"package:0": "--api-key", "package:1": "token", "package:2": "SHARED_KEY", "remote:0": "tenant_key"}
        for option, key in exposed.items():
            assert options[option]["runnable"] is False and repr(key) in options[option]["reason"], options[option]
        assert options["package:3"]["runnable"] is True  # a secret in the environment only is fine
        inputs = {"--api-key": secret, "token": secret, "SHARED_KEY": secret, "tenant_key": secret}
        for option in exposed:
            source = {"registry": {"name": name, "option": option}}
            with pytest.raises(DaemonError) as refused:
                d.request("mcpServer/install", {"name": "leaky", "source": source, "inputs": inputs})
            assert (refused.value.reason, refused.value.data["field"]) == (
                "unsupported", "remotes" if option.startswith("remote") else "packages",
            )  # fmt: skip
            assert secret not in json.dumps(refused.value.data)
        source = {"registry": {"name": name, "option": "package:3"}}
        inputs = {"ENV_KEY": secret, "workspace": "w1"}
        row = d.request("mcpServer/install", {"name": "envkey", "source": source, "inputs": inputs, "enabled": False})
        config = row["server"]["config"]
        assert config["args"] == ["-y", "@example/env-key@1.0.0", "w1"] and config["env"] == {"ENV_KEY": "***"}
        assert [s["name"] for s in d.request("mcpServer/list", {})["data"]] == ["envkey"]
        assert secret not in d.stderr()


def test_a_remote_with_a_secret_named_header_installs_only_where_the_keychain_keeps_it(
    data_dir: Path, registry_url: str, tmp_path: Path
) -> None:
    """SPEC §5: a literal secret-named header is kept only in the OS keychain (``inlineSecret`` with the file store),
    so with the file store the option says it cannot run here; with the keychain it installs and the value is an
    item there."""
    from testing.secret_service import secret_service

    name, token = "io.github.user/remote-weather", "Bearer sk-remote-header-777"
    source = {"registry": {"name": name, "option": "remote:0"}}
    params = {"name": "weather", "source": source, "inputs": {"Authorization": token}, "enabled": False}
    with running_daemon(data_dir, args=("--registry-url", registry_url, "--secret-store", "file")) as d:
        d.initialize()
        (option,) = d.request("mcpServer/registry/get", {"name": name})["installOptions"]
        assert option["runnable"] is False and "'Authorization'" in option["reason"]
        with pytest.raises(DaemonError) as refused:
            d.request("mcpServer/install", params)
        assert refused.value.reason == "unsupported" and token not in json.dumps(refused.value.data)
    keychain_args = ("--registry-url", registry_url, "--secret-store", "keychain")
    with (
        secret_service(tmp_path / "keychain") as keychain,
        running_daemon(data_dir, env=keychain.env(), args=keychain_args) as d,
    ):
        d.initialize()
        (option,) = d.request("mcpServer/registry/get", {"name": name})["installOptions"]
        assert option["runnable"] is True
        row = d.request("mcpServer/install", params)["server"]
        assert row["config"]["url"] == "https://api.example.com/mcp"
        assert row["config"]["headers"] == {"Authorization": "***"}
        assert [v for _, v in keychain.items("mcp-app-server: weather headers.Authorization")] == [token]
        assert token not in (data_dir / "mcps.json").read_text() and token not in d.stderr()
