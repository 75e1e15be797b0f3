"""MCP Apps through the real daemon (SPEC §13), against the fixture App server built on the SDK's ``Apps``: the
extension declared only once a host that renders views said so, tool views with ``ui``, model-facing reads without
app-only tools, the call's ``origin`` on both sides of the boundary, and ``ui://`` reads whole and typed."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mcp_runtime.catalog.views import build_views
from protocol.config import StdioServerConfig
from protocol.status import McpTool
from testing.daemon_client import Daemon, DaemonError, running_daemon, unix_client
from testing.fixtures import script
from testing.threads import START_TIMEOUT, call, start_thread

pytestmark = pytest.mark.daemon


def _app_config(*args: str) -> dict[str, Any]:
    command = script("app_server.py", *args)
    return {"command": command[0], "args": command[1:]}


def _refused(daemon: Daemon, thread_id: str, tool: str, origin: str | None) -> DaemonError:
    params = {"threadId": thread_id, "server": "app", "tool": tool} | ({"origin": origin} if origin else {})
    with pytest.raises(DaemonError) as refused:
        daemon.request("mcpServer/tool/call", params, timeout=START_TIMEOUT)
    return refused.value


@contextmanager
def _app_daemon(data_dir: Path) -> Iterator[tuple[Daemon, Path]]:
    with tempfile.TemporaryDirectory(prefix="mas-", dir="/tmp") as short:
        socket_path = Path(short) / "d.sock"
        with running_daemon(data_dir, args=("--listen", f"unix:{socket_path}")) as daemon:
            yield daemon, socket_path


def _management_says(daemon: Daemon) -> str:
    params = {"server": "app", "uri": "app://supports-apps/now"}
    return str(daemon.request("mcpServer/resource/read", params, timeout=START_TIMEOUT)["contents"][0]["text"])


def test_the_extension_is_declared_only_after_a_host_that_renders_views_said_so(data_dir: Path) -> None:
    with _app_daemon(data_dir) as (daemon, socket_path):
        daemon.initialize()  # a host without views
        daemon.request("mcpServer/create", {"name": "app", "config": _app_config()})
        daemon.request("mcpServer/start", {"name": "app"}, timeout=START_TIMEOUT)
        assert _management_says(daemon) == "no"
        before = start_thread(daemon, servers=["app"])
        assert call(daemon, before, "app", "supports_apps")["content"][0]["text"] == "no"
        with unix_client(socket_path) as viewer:
            viewer.initialize(mcpApps={})
            after = start_thread(viewer, servers=["app"])
            assert call(viewer, after, "app", "supports_apps")["content"][0]["text"] == "yes"
        assert call(daemon, before, "app", "supports_apps")["content"][0]["text"] == "no", "opened before: kept"
        later = start_thread(daemon, servers=["app"])
        assert call(daemon, later, "app", "supports_apps")["content"][0]["text"] == "yes", "every connection after"
        assert _management_says(daemon) == "no", "the management connection opened before keeps its declaration"
        daemon.request("mcpServer/stop", {"name": "app"}, timeout=START_TIMEOUT)
        daemon.request("mcpServer/start", {"name": "app"}, timeout=START_TIMEOUT)
        assert _management_says(daemon) == "yes", "a management connection opened after declares it"


def test_views_visibility_and_the_origin_of_a_call(data_dir: Path) -> None:
    with running_daemon(data_dir) as daemon:
        daemon.initialize(mcpApps={})
        daemon.request("mcpServer/create", {"name": "app", "config": _app_config()})
        daemon.request("mcpServer/start", {"name": "app"}, timeout=START_TIMEOUT)
        listed = {view["tool"]: view.get("ui") for view in daemon.request("mcpTool/list", {"server": "app"})["data"]}
        view = "ui://counter/view.html"
        assert listed == {
            "show_counter": {"resourceUri": view, "visibility": ["model", "app"]},
            "increment": {"resourceUri": view, "visibility": ["app"]},
            "reset_counter": {"resourceUri": view, "visibility": ["model"]},
            "supports_apps": None,
        }
        thread_id = start_thread(daemon, servers=["app"])
        model = {v["tool"] for v in daemon.request("mcpTool/listForContext", {"threadId": thread_id})["data"]}
        assert model == {"show_counter", "reset_counter", "supports_apps"}, "no app-only tool reaches a model"
        select = daemon.request("mcpTool/search", {"query": "select:mcp__app__increment", "threadId": thread_id})
        assert select["data"] == [] and select["missing"] == ["mcp__app__increment"]

        opened = call(daemon, thread_id, "app", "show_counter", {"start": 5})
        assert opened["structuredContent"] == {"count": 5}
        counted = call(daemon, thread_id, "app", "increment", {"by": 2}, origin="app")
        assert counted["structuredContent"] == {"count": 7}
        model_call = _refused(daemon, thread_id, "increment", None)
        assert (model_call.code, model_call.reason) == (-32012, "toolNotAllowed")
        assert model_call.data["visibility"] == ["app"]
        app_call = _refused(daemon, thread_id, "reset_counter", "app")
        assert (app_call.reason, app_call.data["visibility"]) == ("toolNotAllowed", ["model"])
        assert call(daemon, thread_id, "app", "supports_apps", origin="app")["content"][0]["text"] == "yes"


def test_a_view_is_read_whole_and_typed_and_a_view_too_large_is_refused(data_dir: Path) -> None:
    """A view over 16 MiB is refused with its size, and the refusal costs the connection nothing: the next read
    on the same connection is answered (the server's process is the same)."""
    with running_daemon(data_dir) as daemon:
        daemon.initialize(mcpApps={})
        daemon.request("mcpServer/create", {"name": "app", "config": _app_config("--big-view", str(17 << 20))})
        thread_id = start_thread(daemon, servers=["app"])
        for owner in ({}, {"threadId": thread_id}):
            if not owner:
                daemon.request("mcpServer/start", {"name": "app"}, timeout=START_TIMEOUT)
            params = {"server": "app", "uri": "ui://counter/view.html", "preview": True, **owner}
            [content] = daemon.request("mcpServer/resource/read", params, timeout=START_TIMEOUT)["contents"]
            assert content["mimeType"] == "text/html;profile=mcp-app"
            assert content["text"].endswith("</html>\n") and "truncated" not in content, "never a preview's cut"
            assert content["_meta"]["ui"] == {
                "csp": {"connectDomains": ["https://api.example.test"], "resourceDomains": []},
                "prefersBorder": True,
            }
            big = {"server": "app", "uri": "ui://counter/big.html", **owner}
            with pytest.raises(DaemonError) as refused:
                daemon.request("mcpServer/resource/read", big, timeout=START_TIMEOUT)
            assert (refused.value.code, refused.value.reason) == (-32013, "resourceTooLarge")
            assert refused.value.data["size"] > 17 << 20 and refused.value.data["limit"] == 16 << 20
            again = daemon.request("mcpServer/resource/read", params, timeout=START_TIMEOUT)["contents"]
            assert again[0]["text"] == content["text"]
        rows = daemon.request("mcpServerStatus/list", {"serverName": "app"})["data"]
        assert rows[0]["runtimeStatus"] == "connected" and not rows[0].get("lastError")


def _view(meta: dict[str, Any]) -> Any:
    tool = McpTool.model_validate({"name": "t", "inputSchema": {"type": "object"}, "_meta": meta})
    [view] = build_views("s", StdioServerConfig(command="x"), [tool])
    return view.ui


def test_the_older_meta_key_and_malformed_visibility() -> None:
    older = _view({"ui/resourceUri": "ui://s/v.html"})
    assert (older.resource_uri, older.visibility) == ("ui://s/v.html", ["model", "app"])
    assert _view({"ui": {"visibility": ["app", "robot"]}}).visibility == ["app"], "unknown entries dropped"
    assert _view({"ui": {"visibility": ["robot"]}}).visibility == [], "nothing valid left: no one's (fail closed)"
    assert _view({"ui": {"resourceUri": 7}}).resource_uri is None
    assert _view({}) is None


@pytest.mark.parametrize(
    ("value", "who"),
    [("app", ["app"]), ("model", ["model"]), ("both", []), ({"app": True}, []), (1, []), (None, ["model", "app"])],
)
def test_a_visibility_that_is_not_a_list_never_opens_a_tool(value: Any, who: list[str]) -> None:
    """A lone string names its one entry; any other type names no one; only an absent one means both."""
    assert _view({"ui": {"resourceUri": "ui://s/v.html", "visibility": value}}).visibility == who


def test_a_views_csp_reaches_the_host_as_origins_only(data_dir: Path) -> None:
    """A hostile server's `_meta.ui.csp`: the read hands over its public origins, in ASCII, and nothing else."""
    with running_daemon(data_dir) as daemon:
        daemon.initialize(mcpApps={})
        command = script("hostile_view_server.py")
        daemon.request("mcpServer/create", {"name": "hostile", "config": {"command": command[0], "args": command[1:]}})
        thread_id = start_thread(daemon, servers=["hostile"])
        params = {"threadId": thread_id, "server": "hostile", "uri": "ui://hostile/view.html"}
        read = daemon.request("mcpServer/resource/read", params, timeout=START_TIMEOUT)
        csp = read["contents"][0]["_meta"]["ui"]["csp"]
        assert csp["connectDomains"] == ["https://api.example.test", "https://xn--bcher-kva.example"]
        assert daemon.request("mcpServer/list", {})["data"][0]["name"] == "hostile", "the daemon keeps serving"
