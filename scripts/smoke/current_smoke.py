"""The smoke run: spawn the real daemon on a temp data dir and exercise what it offers against the
bundled fixture servers, printing a pass/fail table.

    python scripts/smoke/current_smoke.py [--allow-write-fixture] [--allow-oauth-fixture] [--allow-live-provider]
                                          [--daemon-command '["dist/mcp-app-server/mcp-app-server"]']

``--allow-write-fixture`` runs import/sync against a temporary fixture home (never the real one);
``--allow-oauth-fixture`` logs into the bundled OAuth fixture; ``--allow-live-provider`` needs
``MCP_APP_SERVER_LIVE_URL`` and ``MCP_APP_SERVER_LIVE_TOKEN_ENV`` (the name of a set variable holding the bearer
token) and fails closed, naming what is missing, before any daemon call without them.
``--daemon-command`` (a JSON argv) runs the same checks against a shipped artifact, an installed wheel's
script or the bundle, instead of the checkout's ``python -m app_server``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scripts.smoke.fixtures.launch import http_fixture  # noqa: E402
from testing.daemon_client import DAEMON_COMMAND_ENV, Daemon, DaemonError, running_daemon  # noqa: E402
from testing.fixtures import NODE_MODULES, everything_config, fixture_config, script  # noqa: E402
from testing.ordering import retired_events, startup_statuses, until_response  # noqa: E402


@dataclass
class Outcome:
    area: str
    check: str
    ok: bool
    detail: str
    seconds: float


class Smoke:
    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []

    def check(self, area: str, name: str, body: Callable[[], str]) -> None:
        start = time.monotonic()
        try:
            detail, ok = body(), True
        except (AssertionError, DaemonError, TimeoutError, OSError, RuntimeError, KeyError) as exc:
            detail, ok = f"{type(exc).__name__}: {exc}"[:160], False
        self.outcomes.append(Outcome(area, name, ok, detail, time.monotonic() - start))

    def report(self) -> int:
        width = max(len(o.check) for o in self.outcomes)
        print(f"\n{'area':<10} {'check':<{width}}  result  {'time':>6}  detail")
        print("-" * (width + 60))
        for o in self.outcomes:
            mark = "PASS" if o.ok else "FAIL"
            print(f"{o.area:<10} {o.check:<{width}}  {mark:<6}  {o.seconds:5.2f}s  {o.detail}")
        failed = sum(not o.ok for o in self.outcomes)
        print(f"\n{len(self.outcomes) - failed} passed, {failed} failed")
        return 1 if failed else 0


def expect_error(d: Daemon, method: str, params: Any, reason: str) -> str:
    try:
        d.request(method, params, timeout=60)
    except DaemonError as exc:
        assert exc.reason == reason, f"expected {reason}, got {exc.reason}"
        return f"{exc.code} {exc.reason}"
    raise AssertionError(f"{method} succeeded; expected {reason}")


def foundation(smoke: Smoke, d: Daemon) -> None:
    def initialize() -> str:
        result = d.initialize()
        return f"{len(result['methods'])} methods, {len(result['notifications'])} notifications"

    smoke.check("wire", "initialize", initialize)
    smoke.check("wire", "retired name", lambda: expect_error(d, "mcp_call_tool", {}, "retired"))
    smoke.check("wire", "unknown method", lambda: expect_error(d, "mcpServer/nope", {}, "methodNotFound"))

    def parse_error() -> str:
        d.send_raw(b"{not json\n")
        response = d.wait_for(lambda m: m.get("error", {}).get("code") == -32700)
        assert response["id"] is None
        return "-32700 with id null"

    smoke.check("wire", "bad JSON line", parse_error)

    def too_large() -> str:
        d.send_raw(b'{"id":"big","x":"' + b"a" * (4 * 1024 * 1024 + 1) + b'"}\n')
        d.wait_for(lambda m: m.get("error", {}).get("data", {}).get("reason") == "messageTooLarge")
        d.request("mcpServer/list")
        return "discarded, still serving"

    smoke.check("wire", "4 MiB line", too_large)
    smoke.check("store", "inline secret refused", lambda: expect_error(d, "mcpServer/create", {
        "name": "leak", "config": {"type": "http", "url": "https://x.example/mcp",
                                   "headers": {"Authorization": "Bearer x"}}}, "inlineSecret"))
    smoke.check("store", "insecure URL refused", lambda: expect_error(d, "mcpServer/create", {
        "name": "plain", "config": {"type": "http", "url": "http://x.example/mcp"}}, "insecureUrl"))

    def create_and_redact() -> str:
        d.request("mcpServer/create", {"name": "fx", "config": fixture_config(env={"FIXTURE_TOKEN": "s3cr3t"})})
        listed = d.request("mcpServer/list")["data"]
        assert "s3cr3t" not in json.dumps(listed)
        return "created; env values shown as ***"

    smoke.check("store", "create + redacted list", create_and_redact)
    smoke.check("store", "revision mismatch", lambda: expect_error(d, "mcpServer/update", {
        "name": "fx", "config": fixture_config(), "expectedRevision": 7}, "revisionMismatch"))


def runtime(smoke: Smoke, d: Daemon) -> None:
    def start() -> str:
        status = d.request("mcpServer/start", {"name": "fx"}, timeout=60)["status"]
        assert status["runtimeStatus"] == "connected"
        return f"connected, protocol {status['protocolVersion']}, {len(status['tools'])} tools"

    smoke.check("runtime", "start stdio fixture", start)

    def tools() -> str:
        views = d.request("mcpTool/list", {"server": "fx"})["data"]
        found = d.request("mcpTool/search", {"query": "echo"})["data"]
        assert found and found[0]["name"] == "mcp__fx__echo"
        return f"{len(views)} tools; search 'echo' → {found[0]['name']}"

    smoke.check("runtime", "tool list + search", tools)

    def prompt_and_resource() -> str:
        got = d.request("mcpPrompt/get", {"server": "fx", "name": "greet", "arguments": {"name": "smoke"}})
        text = d.request("mcpServer/resource/read", {"server": "fx", "uri": "fixture://static/hello"})
        return f"{got['messages'][0]['content']['text']!r}, {text['contents'][0]['text']!r}"

    smoke.check("runtime", "prompt + resource", prompt_and_resource)

    def crash() -> str:
        argv = script("crash_at_start.py")
        d.request("mcpServer/create", {"name": "crash", "config": {"command": argv[0], "args": argv[1:]}})
        detail = expect_error(d, "mcpServer/start", {"name": "crash"}, "startupFailed")
        failed = d.wait_notification("mcpServer/startupStatus/updated", lambda p: p["name"] == "crash"
                                     and p["status"] == "failed")
        return f"{detail}; published failed/{failed['error']['reason']}"

    smoke.check("runtime", "crash at start", crash)

    def hang() -> str:
        argv = script("hang_at_start.py")
        d.request("mcpServer/create", {"name": "hang", "config": {"command": argv[0], "args": argv[1:],
                                                                  "startupTimeoutMs": 1000}})
        return expect_error(d, "mcpServer/start", {"name": "hang"}, "timeout")

    smoke.check("runtime", "hang at start", hang)

    def startup_order() -> str:
        argv = script("crash_at_start.py")
        # disabled: the starts watched are the ones asked for (an enabled server starts at create)
        d.request("mcpServer/create", {"name": "order-ok", "config": fixture_config(enabled=False)})
        bad = {"command": argv[0], "args": argv[1:], "enabled": False}
        d.request("mcpServer/create", {"name": "order-bad", "config": bad})
        seen = []
        for name, ending in (("order-ok", "ready"), ("order-bad", "failed")):
            request = d.start_request("mcpServer/start", {"name": name})
            before, response = until_response(d, request, startup_statuses(name), 60)
            statuses = [m["params"]["status"] for m in before]
            assert statuses == ["starting", ending], (name, statuses)
            if ending == "failed":
                typed = before[-1]["params"]["error"]["reason"]
                assert "error" in response and response["error"]["data"]["reason"] == typed, (typed, response)
            else:
                assert "result" in response, response
            seen.append(f"{name}: {' → '.join(statuses)} → {'error' if 'error' in response else 'result'}")
        assert not retired_events(d), retired_events(d)
        return "; ".join(seen) + "; no retired mcp:server_* event"

    smoke.check("runtime", "startup order", startup_order)

    def http() -> str:
        with http_fixture() as url:
            d.request("mcpServer/create", {"name": "web", "config": {"type": "http", "url": url}})
            status = d.request("mcpServer/start", {"name": "web"}, timeout=60)["status"]
            d.request("mcpServer/stop", {"name": "web"})
            return f"connected over Streamable HTTP, protocol {status['protocolVersion']}"

    smoke.check("runtime", "HTTP fixture", http)

    if (NODE_MODULES / "@modelcontextprotocol" / "server-everything").exists():
        def everything() -> str:
            d.request("mcpServer/create", {"name": "ev", "config": everything_config()})
            status = d.request("mcpServer/start", {"name": "ev"}, timeout=60)["status"]
            return f"server-everything: {len(status['tools'])} tools, protocol {status['protocolVersion']}"

        smoke.check("runtime", "npm server-everything", everything)

    def status_list() -> str:
        data = d.request("mcpServerStatus/list")["data"]
        return ", ".join(f"{s['name']}={s['runtimeStatus']}" for s in data)

    smoke.check("runtime", "status list", status_list)


def threads(smoke: Smoke, d: Daemon) -> None:
    state: dict[str, Any] = {}

    def start_thread() -> str:
        thread = d.request("thread/start", {"servers": ["fx"], "name": "smoke"})["thread"]
        state["id"] = thread["id"]
        return f"thread {thread['id']} with {thread['servers']}"

    smoke.check("threads", "thread/start", start_thread)
    smoke.check("threads", "call without threadId", lambda: expect_error(
        d, "mcpServer/tool/call", {"server": "fx", "tool": "echo", "arguments": {"text": "x"}}, "threadRequired"))
    smoke.check("threads", "unknown thread", lambda: expect_error(
        d, "mcpServer/tool/call", {"threadId": "nope", "server": "fx", "tool": "echo"}, "unknownThread"))

    def call() -> str:
        result = d.request("mcpServer/tool/call", {"threadId": state["id"], "server": "fx", "tool": "echo",
                                                   "arguments": {"text": "hi"}}, timeout=60)
        assert result["content"][0]["text"] == "hi"
        return "echo → 'hi'"

    smoke.check("threads", "tool call", call)

    def progress() -> str:
        arguments = {"steps": 3, "delay_ms": 10}
        request = d.start_request("mcpServer/tool/call", {"threadId": state["id"], "turnId": "t1", "server": "fx",
                                                          "tool": "progress", "arguments": arguments})
        d.wait_response(request, 60)
        events = [p for p in d.notifications("mcpServer/tool/progress") if p["requestId"] == request]
        assert len(events) == 3 and events[0]["turnId"] == "t1"
        return f"{len(events)} progress notifications"

    smoke.check("threads", "progress", progress)
    smoke.check("threads", "invalid arguments", lambda: expect_error(d, "mcpServer/tool/call", {
        "threadId": state["id"], "server": "fx", "tool": "add", "arguments": {"a": "x"}}, "invalidArguments"))
    smoke.check("threads", "invalid output", lambda: expect_error(d, "mcpServer/tool/call", {
        "threadId": state["id"], "server": "fx", "tool": "bad_output"}, "invalidOutput"))
    smoke.check("threads", "timeout", lambda: expect_error(d, "mcpServer/tool/call", {
        "threadId": state["id"], "server": "fx", "tool": "sleep", "arguments": {"ms": 5000}, "timeoutMs": 300},
        "timeout"))

    def elicitation() -> str:
        request = d.start_request("mcpServer/tool/call", {"threadId": state["id"], "server": "fx", "tool": "ask",
                                                          "arguments": {"question": "who?"}})
        asked = d.wait_server_request("mcpServer/elicitation/request", 60)
        d.answer(asked["id"], {"action": "accept", "content": {"name": "Smoke", "age": 3}})
        result = d.wait_response(request, 60)["result"]
        resolved = d.wait_notification("serverRequest/resolved")
        assert resolved["requestId"] == asked["id"] and resolved["action"] == "accept", resolved
        return f"asked {asked['params']['message']!r}; result {result['content'][0]['text']}"

    smoke.check("threads", "elicitation round trip", elicitation)

    eras = {era: fixture_config(protocol=protocol) for era, protocol in (("e26", "2026-07-28"), ("e25", "2025-11-25"))}

    def resolved_first() -> str:
        """``serverRequest/resolved`` reaches the client before the call's cancelled error, in both eras."""
        thread_id = d.request("thread/start", {"mcpServers": eras, "strictMcpConfig": True})["thread"]["id"]
        seen = []
        for era in eras:
            request = d.start_request("mcpServer/tool/call", {"threadId": thread_id, "server": era, "tool": "ask",
                                                              "arguments": {"question": "cancel"}})
            asked = d.wait_server_request("mcpServer/elicitation/request", 60)
            d.notify("$/cancelRequest", {"id": request})
            before, response = until_response(d, request, lambda m, srv=asked["id"]: m.get(
                "method") == "serverRequest/resolved" and m["params"]["requestId"] == srv, 60)
            reason = response["error"]["data"]["reason"]
            assert reason == "cancelled", response
            assert [m["params"]["action"] for m in before] == ["cancel"], "resolved did not come before the error"
            seen.append(f"{era}: resolved, then {reason}")
        return "; ".join(seen)

    def form_outlives_the_tool_timeout() -> str:
        """A form left open past the call's ``timeoutMs`` is not cut: the tool timeout counts the server's time."""
        thread_id = d.request("thread/start", {"mcpServers": eras, "strictMcpConfig": True})["thread"]["id"]
        seen = []
        for era in eras:
            request = d.start_request("mcpServer/tool/call", {"threadId": thread_id, "server": era, "tool": "ask",
                                                              "arguments": {"question": "slow"}, "timeoutMs": 500})
            asked = d.wait_server_request("mcpServer/elicitation/request", 60)
            time.sleep(1.5)  # the user takes three times the tool's timeout to fill the form in
            d.answer(asked["id"], {"action": "accept", "content": {"name": "Ada", "age": 36}})
            result = d.wait_response(request, 60)
            assert "result" in result, result
            seen.append(f"{era}: answered after 1.5 s of a 0.5 s timeout, the call completed")
        return "; ".join(seen)

    smoke.check("threads", "resolved before cancelled error", resolved_first)
    smoke.check("threads", "a form outlives the tool timeout", form_outlives_the_tool_timeout)


def host(smoke: Smoke, d: Daemon) -> None:
    """What a host's settings page and turn loop meet (issue 11): lossless edits, patches, reads after start."""

    def settings_round_trip() -> str:
        config = everything_config(env={"API_KEY": "sm0ke-secret"}, description="before")
        d.request("mcpServer/create", {"name": "settings", "config": config})
        shown = d.request("mcpServer/list", {"names": ["settings"]})["data"][0]["config"]
        assert shown["env"] == {"API_KEY": "***"}, shown
        d.request("mcpServer/update", {"name": "settings", "config": {**shown, "description": "after"}})
        thread_id = d.request("thread/start", {"servers": ["settings"]})["thread"]["id"]
        result = d.request("mcpServer/tool/call", {"threadId": thread_id, "server": "settings", "tool": "get-env"},
                           timeout=60)
        env = json.loads(result["content"][0]["text"])
        assert env.get("API_KEY") == "sm0ke-secret", "the stored secret did not survive the edit"
        return "list → edit → update kept the stored secret; the server saw it"

    def merge_patch() -> str:
        d.request("mcpServer/update", {"name": "settings", "patch": {"enabled": False, "description": None}})
        server = d.request("mcpServer/list", {"names": ["settings"]})["data"][0]
        assert server["enabled"] is False and "description" not in server["config"], server
        return "enabled=false applied, description removed"

    def reads_after_start() -> str:
        thread_id = d.request("thread/start", {"mcpServers": {"rd": fixture_config()}, "strictMcpConfig": True})[
            "thread"]["id"]
        tools = d.request("mcpTool/listForContext", {"threadId": thread_id}, timeout=60)["data"]
        prompt = d.request("mcpPrompt/get", {"threadId": thread_id, "server": "rd", "name": "greet",
                                             "arguments": {"name": "smoke"}}, timeout=60)
        assert tools and prompt["messages"], (tools, prompt)
        return f"right after thread/start: {len(tools)} tools, prompt answered"

    def plain_config_error() -> str:
        try:
            d.request("mcpServer/create", {"name": "u", "config": {"url": "https://x.example/mcp"}})
        except DaemonError as exc:
            errors = exc.data.get("errors") or [{}]
            assert exc.reason == "invalidParams" and "http" in errors[0].get("message", ""), exc.data
            return f"{errors[0]['path']}: {errors[0]['message']}"
        raise AssertionError("a url without type was accepted")

    smoke.check("host", "settings page round trip", settings_round_trip)
    smoke.check("host", "merge patch", merge_patch)
    smoke.check("host", "thread reads right after start", reads_after_start)
    smoke.check("host", "config error in plain words", plain_config_error)
    smoke.check("host", "unknown server named", lambda: expect_error(
        d, "mcpServer/list", {"names": ["nope"]}, "unknownServer"))


def hardening(smoke: Smoke, d: Daemon) -> None:
    """Hostile lines get typed answers and the connection keeps serving (issue 10)."""

    def answered(raw: bytes, code: int) -> str:
        d.send_raw(raw)
        reply = d.wait_for(lambda m: "error" in m and m.get("id") is None, 30)
        assert reply["error"]["code"] == code, reply
        d.request("mcpServer/list")
        return f"{code} {reply['error']['data']['reason']}; still serving"

    smoke.check("hardening", "nesting 982 deep", lambda: answered(b"[" * 982 + b"]" * 982 + b"\n", -32700))
    smoke.check("hardening", "NaN", lambda: answered(b'{"id":1,"method":"mcpServer/list","params":NaN}\n', -32700))
    smoke.check("hardening", "invalid UTF-8", lambda: answered(b'{"id":"\xff","method":"x"}\n', -32700))
    smoke.check("hardening", "lone surrogate id", lambda: answered(
        b'{"id":"\\ud800","method":"mcpServer/list"}\n', -32600))


def read_context(d: Daemon, thread_id: str, ref: dict[str, Any], limit: int) -> tuple[bytes, int]:
    """Page an archived ref back through ``thread/context/read``; the bytes and the number of pages."""
    chunks: list[bytes] = []
    offset: int | None = 0
    while offset is not None:
        page = d.request("thread/context/read", {"threadId": thread_id, "ref": ref["ref"], "offset": offset,
                                                 "limit": limit})
        chunks.append(page["data"].encode() if ref["kind"] == "text" else base64.b64decode(page["data"]))
        offset = page["nextOffset"]
    data = b"".join(chunks)
    assert hashlib.sha256(data).hexdigest() == ref["sha256"] and len(data) == ref["bytes"], ref
    return data, len(chunks)


def results(smoke: Smoke, d: Daemon) -> None:
    """Result fidelity (a 2026-07-28 connection), the projection and its archive, and elicitation answers."""
    params = {"strictMcpConfig": True, "mcpServers": {"fx": fixture_config(protocol="2026-07-28")}}
    thread_id = d.request("thread/start", params)["thread"]["id"]

    def tool(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        params = {"threadId": thread_id, "server": "fx", "tool": name, "arguments": arguments or {}}
        result: dict[str, Any] = d.request("mcpServer/tool/call", params, timeout=60)
        return result

    def scalar() -> str:
        result = tool("scalar")
        assert result["structuredContent"] == 42, result
        return f"structuredContent {result['structuredContent']!r}; projection {result['projection']['text']}"

    def large_text() -> str:
        projection = tool("big", {"bytes": 100_000})["projection"]
        [ref] = projection["refs"]
        assert projection["truncated"] and len(projection["text"].encode()) <= 16 * 1024
        _, pages = read_context(d, thread_id, ref, 64 * 1024)
        return f"{len(projection['text'].encode())} B inline; {ref['bytes']} B behind a ref, {pages} pages, sha256 ok"

    def media() -> str:
        projection = tool("media", {"bytes": 100_000})["projection"]
        kinds = [ref["kind"] for ref in projection["refs"]]
        assert kinds == ["image", "resource"], kinds
        data, pages = read_context(d, thread_id, projection["refs"][0], 64 * 1024)
        assert data == bytes(i % 256 for i in range(100_000))
        return f"refs {kinds}; image read back as base64 in {pages} pages, sha256 ok"

    def unknown_ref() -> str:
        return expect_error(d, "thread/context/read", {"threadId": thread_id, "ref": "ctx_1"}, "unknownRef")

    def broken_form() -> str:
        request = d.start_request("mcpServer/tool/call", {"threadId": thread_id, "server": "fx", "tool": "ask",
                                                          "arguments": {"question": "age?"}})
        asked = d.wait_server_request("mcpServer/elicitation/request", 60)
        d.answer(asked["id"], {"action": "accept", "content": {"name": "Smoke", "age": "three"}})
        resolved = d.wait_notification("serverRequest/resolved", lambda p: p["requestId"] == asked["id"])
        upstream = d.wait_response(request, 60)["result"]["content"][0]["text"]
        assert (resolved["action"], resolved.get("reason")) == ("cancel", "invalidElicitationResponse"), resolved
        assert upstream == '{"action": "cancel"}', upstream
        paths = [e["path"] for e in resolved["errors"]]
        return f"server got {upstream}; resolved: {resolved['reason']} at {paths}"

    smoke.check("results", "scalar structuredContent", scalar)
    smoke.check("results", "large text → ref, paged", large_text)
    smoke.check("results", "media archived, base64", media)
    smoke.check("results", "unknown ref", unknown_ref)
    smoke.check("results", "non-fitting form answer", broken_form)


def apps(smoke: Smoke, base: Path) -> None:
    home = base / "home"
    (home / ".codex").mkdir(parents=True)
    codex = home / ".codex" / "config.toml"
    codex.write_text('# mine\nmodel = "o4"\n\n[mcp_servers.mine]\ncommand = "my-tool"\n')
    (home / ".cursor").mkdir()
    (home / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"cur": {"command": "cursor-tool"}}}))
    env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex"), "XDG_CONFIG_HOME": str(home / ".config")}
    with running_daemon(base / "apps-data", env=env) as d:
        d.initialize()

        def do_import() -> str:
            result = d.request("mcpServer/importFromApp", {"app": "cursor"})
            assert result["imported"] == ["cur"]
            return f"imported {result['imported']} from a fixture home"

        smoke.check("apps", "import from Cursor", do_import)

        def do_sync() -> str:
            d.request("mcpServer/enabled/set", {"name": "cur", "enabled": True, "app": "codex"})
            result = d.request("mcpServer/syncAllToLive", {"apps": ["codex"]})["results"][0]
            text = codex.read_text()
            assert "# mine" in text and "[mcp_servers.mine]" in text and "[mcp_servers.cur]" in text
            return f"wrote {result['servers']} to {Path(result['path']).name}; comments kept; backup kept"

        smoke.check("apps", "sync to Codex", do_sync)


def oauth(smoke: Smoke, d: Daemon) -> None:
    from scripts.smoke.fixtures.launch import oauth_fixture  # type: ignore[attr-defined]

    def login() -> str:
        import httpx2

        with oauth_fixture() as url:
            d.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": url, "oauth": {}}})
            started = d.request("mcpServer/oauth/login", {"name": "sec"}, timeout=60)
            location = httpx2.get(started["authorizationUrl"], follow_redirects=False).headers["location"]
            httpx2.get(location, follow_redirects=False)
            done = d.wait_notification("mcpServer/oauthLogin/completed", lambda p: p["loginId"] == started["loginId"],
                                       timeout=60)
            assert done["success"], done
            status = d.request("mcpServer/start", {"name": "sec"}, timeout=60)["status"]
            return f"logged in; status {status['runtimeStatus']}, auth {status['authStatus']}"

    smoke.check("oauth", "login via loopback callback", login)


def daemon_command(text: str) -> list[str]:
    """A JSON argv whose program is resolved now, so a relative path keeps meaning what it meant here."""
    try:
        argv = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from exc
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
        raise argparse.ArgumentTypeError("expected a JSON list of non-empty strings")
    program = Path(argv[0])
    if len(program.parts) > 1:
        argv[0] = str(program.absolute())
    return argv


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--allow-write-fixture", action="store_true")
    parser.add_argument("--allow-oauth-fixture", action="store_true")
    parser.add_argument("--allow-live-provider", action="store_true")
    parser.add_argument("--daemon-command", type=daemon_command, help="JSON argv of the daemon to drive")
    args = parser.parse_args()
    if args.daemon_command:
        os.environ[DAEMON_COMMAND_ENV] = json.dumps(args.daemon_command)
        print(f"daemon: {' '.join(args.daemon_command)}")
    if args.allow_live_provider and (missing := live_provider_missing(os.environ)):
        print(f"--allow-live-provider needs {missing}; nothing was run.")
        return 2
    smoke = Smoke()
    with tempfile.TemporaryDirectory(prefix="mcp-smoke-") as tmp:
        base = Path(tmp)
        (base / "data").mkdir()
        with running_daemon(base / "data") as d:
            foundation(smoke, d)
            runtime(smoke, d)
            threads(smoke, d)
            results(smoke, d)
            host(smoke, d)
            hardening(smoke, d)
            if args.allow_oauth_fixture:
                oauth(smoke, d)
            if args.allow_live_provider:
                live(smoke, d)
        if args.allow_write_fixture:
            apps(smoke, base)
    return smoke.report()


LIVE_URL = "MCP_APP_SERVER_LIVE_URL"
LIVE_TOKEN_ENV = "MCP_APP_SERVER_LIVE_TOKEN_ENV"


def live_provider_missing(env: Mapping[str, str]) -> str | None:
    """What a live run still lacks, or None: the server URL *and* a credential (the name of the variable that
    holds the bearer token, and that variable set). A live row never runs, and so never passes, without both."""
    if not env.get(LIVE_URL):
        return f"{LIVE_URL} (the live server URL)"
    token_env = env.get(LIVE_TOKEN_ENV)
    if not token_env:
        return f"{LIVE_TOKEN_ENV} (the name of the variable holding the live server's bearer token)"
    if not env.get(token_env):
        return f"{token_env} (named by {LIVE_TOKEN_ENV}) to hold the live server's bearer token"
    return None


def live(smoke: Smoke, d: Daemon) -> None:
    def connect() -> str:
        config = {"type": "http", "url": os.environ[LIVE_URL], "bearerTokenEnvVar": os.environ[LIVE_TOKEN_ENV]}
        d.request("mcpServer/create", {"name": "live", "config": config})
        status = d.request("mcpServer/start", {"name": "live"}, timeout=120)["status"]
        assert status["authStatus"] == "bearerToken", status["authStatus"]
        return f"{status['runtimeStatus']} with a bearer token, {len(status['tools'])} tools"

    smoke.check("live", "connect to live provider", connect)


if __name__ == "__main__":
    raise SystemExit(main())
