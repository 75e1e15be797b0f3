"""Client for the MCP conformance harness that makes the scenario's calls *through the daemon*.

The harness (``conformance client --command "<python> daemon_client_driver.py" --scenario NAME``) starts the
scenario's server, then runs this command with the server URL appended as the last argument and the scenario
name in ``MCP_CONFORMANCE_SCENARIO``. This driver behaves like a desktop host of the daemon:

1. spawn ``python -m app_server --data-dir <tmp>`` (``tests/daemon_client.py``) and ``initialize``;
2. ``mcpServer/create {name, config: {type: "http", url}}`` — with ``oauth: {}`` for ``auth/*`` scenarios;
3. when the server needs a login (an ``auth/*`` scenario, or ``mcpServer/start`` failing with
   ``authRequired``/``reauthenticationRequired``, which switches the config to ``oauth: {}``):
   ``mcpServer/oauth/login {name}`` → ``authorizationUrl``; play the browser (GET it without following
   redirects, then GET each ``Location`` until the daemon's loopback callback has answered) and wait for
   ``mcpServer/oauthLogin/completed``;
4. ``mcpServer/start {name}``, ``thread/start {servers: [name]}``, then the scenario's tool call through
   ``mcpServer/tool/call`` (``test-tool {}`` for ``auth/*``, ``add_numbers {a:5,b:3}`` for ``tools_call``;
   none for ``initialize`` — starting the server already initialized and listed tools). A call refused with
   ``insufficientScope`` is retried once after a fresh login (step-up), as a host would.

With ``--allow-reported-origins`` (or ``CONFORMANCE_ALLOW_REPORTED_ORIGINS=1``) the host also "asks the user"
when a login is refused because an OAuth endpoint is on a foreign origin, and on consent adds that origin
(``error.data.origin``) to ``oauth.allowedOrigins`` and retries the login.

Exit code 0 on success; non-zero with a one-line typed reason on stderr otherwise. Set
``CONFORMANCE_DRIVER_DEBUG=1`` to also print the daemon's stderr log tail.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.parse import urljoin
from urllib.request import HTTPRedirectHandler, Request, build_opener

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.daemon_client import Daemon, DaemonError  # noqa: E402

SERVER = "conformance"
TIMEOUT = 25.0
AUTH_REASONS = {"authRequired", "reauthenticationRequired"}
# Opt-in host behaviour: when a login is refused because an OAuth endpoint is on a foreign origin (reason
# oauthFailed, step policy, data.origin), "the user consents": the origin goes into oauth.allowedOrigins and
# the login is retried. Off by default (a config of just ``oauth: {}``).
ALLOW_REPORTED_ORIGINS = (
    os.environ.get("CONFORMANCE_ALLOW_REPORTED_ORIGINS") == "1" or "--allow-reported-origins" in sys.argv
)


class DriverFailure(Exception):
    pass


class _NoRedirect(HTTPRedirectHandler):
    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        return None


def play_browser(authorization_url: str) -> list[str]:
    """GET the URL and each redirect target by hand (a browser whose user approves at once).

    Stops at the first response that is not a redirect — normally the daemon's loopback callback page.
    Returns the visited hosts (for the report; never the URLs, which carry codes).
    """
    opener = build_opener(_NoRedirect)
    url, visited = authorization_url, []
    for _ in range(10):
        visited.append(url.split("?", 1)[0])
        try:
            with opener.open(Request(url, method="GET"), timeout=TIMEOUT) as response:
                status, location = response.status, response.headers.get("Location")
        except HTTPError as exc:  # 3xx (not followed) and 4xx/5xx land here
            status, location = exc.code, exc.headers.get("Location")
        if status in (301, 302, 303, 307, 308) and location:
            url = urljoin(url, location)
            continue
        if status >= 400:
            raise DriverFailure(f"browser: {visited[-1]} answered HTTP {status}")
        return visited
    raise DriverFailure("browser: more than 10 redirects")


def call(daemon: Daemon, method: str, params: Any, timeout: float = TIMEOUT) -> Any:
    return daemon.request(method, params, timeout=timeout)


def login(daemon: Daemon, config: dict[str, Any], scopes: list[str] | None = None) -> None:
    params: dict[str, Any] = {"name": SERVER, "timeoutSecs": 60}
    if scopes:
        params["scopes"] = scopes
    for _ in range(4):
        try:
            started = call(daemon, "mcpServer/oauth/login", params)
            break
        except DaemonError as exc:
            origin = exc.data.get("origin")
            if not (ALLOW_REPORTED_ORIGINS and exc.reason == "oauthFailed" and exc.data.get("step") == "policy"):
                raise
            if not origin or origin in config["oauth"].get("allowedOrigins", []):
                raise
            # The host asks the user "allow sign-in through <origin>?"; the user says yes.
            print(f"login refused for origin {origin}; adding it to oauth.allowedOrigins", file=sys.stderr)
            config["oauth"].setdefault("allowedOrigins", []).append(origin)
            call(daemon, "mcpServer/update", {"name": SERVER, "config": config})
    else:
        raise DriverFailure("login kept being refused by the origin policy")
    login_id = started["loginId"]
    visited = play_browser(started["authorizationUrl"])
    print(f"browser visited: {visited}", file=sys.stderr)
    done = daemon.wait_notification(
        "mcpServer/oauthLogin/completed", where=lambda p: p.get("loginId") == login_id, timeout=TIMEOUT
    )
    if not done["success"]:
        error = done.get("error") or {}
        raise DriverFailure(f"oauth login failed: {error.get('reason')}: {error.get('message')}")
    print("oauth login completed", file=sys.stderr)


def start(daemon: Daemon) -> Any:
    return call(daemon, "mcpServer/start", {"name": SERVER}, timeout=60)


def scenario_call(scenario: str) -> tuple[str, dict[str, Any]] | None:
    if scenario.startswith("auth/"):
        return "test-tool", {}
    if scenario in ("tools_call", "tools-call"):
        return "add_numbers", {"a": 5, "b": 3}
    return None


def run(daemon: Daemon, url: str, scenario: str) -> None:
    daemon.initialize()
    config: dict[str, Any] = {"type": "http", "url": url}
    needs_auth = scenario.startswith("auth/")
    if needs_auth:
        config["oauth"] = {}
    call(daemon, "mcpServer/create", {"name": SERVER, "config": config})
    if needs_auth:
        login(daemon, config)
    try:
        start(daemon)
    except DaemonError as exc:
        if exc.reason not in AUTH_REASONS or "oauth" in config:
            raise
        # Detected: the server wants OAuth although the scenario name did not say so.
        config["oauth"] = {}
        call(daemon, "mcpServer/update", {"name": SERVER, "config": config})
        login(daemon, config)
        start(daemon)
    status = call(daemon, "mcpServerStatus/list", {"serverName": SERVER})["data"][0]
    print(f"server {status['runtimeStatus']}, tools: {sorted(status.get('tools') or {})}", file=sys.stderr)

    todo = scenario_call(scenario)
    if todo is None:
        return
    thread_id = call(daemon, "thread/start", {"servers": [SERVER]})["thread"]["id"]
    tool, arguments = todo
    params = {"threadId": thread_id, "server": SERVER, "tool": tool, "arguments": arguments}
    try:
        result = call(daemon, "mcpServer/tool/call", params, timeout=60)
    except DaemonError as exc:
        if exc.reason != "insufficientScope":
            raise
        # Step-up: a host logs in again (with the scopes the error names, if any) and retries once.
        print(f"tool call refused ({exc.reason}); logging in again", file=sys.stderr)
        login(daemon, config, exc.data.get("scopes") or exc.data.get("requiredScopes"))
        result = call(daemon, "mcpServer/tool/call", params, timeout=60)
    if result.get("isError"):
        raise DriverFailure(f"tool {tool} returned isError: {json.dumps(result.get('content'))[:300]}")
    print(f"called {tool}: {json.dumps(result.get('content'))[:300]}", file=sys.stderr)


def describe(exc: BaseException) -> str:
    if isinstance(exc, DaemonError):
        extra = {k: v for k, v in exc.data.items() if k != "reason"}
        return f"daemon error {exc.code} reason={exc.reason}: {exc.message}" + (
            f" {json.dumps(extra)}" if extra else ""
        )
    return f"{type(exc).__name__}: {exc}"


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: daemon_client_driver.py SERVER_URL", file=sys.stderr)
        return 2
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    workdir = Path(tempfile.mkdtemp(prefix="conformance-daemon-"))
    daemon = Daemon(workdir / "data")
    code = 0
    started = time.monotonic()
    try:
        run(daemon, url, scenario)
        print(f"ok in {time.monotonic() - started:.1f}s", file=sys.stderr)
    except (DaemonError, DriverFailure, TimeoutError) as exc:
        print(f"daemon driver FAILED ({scenario}): {describe(exc)}", file=sys.stderr)
        code = 1
    finally:
        exit_code = daemon.close()
        if exit_code != 0:
            print(f"daemon exited with {exit_code}", file=sys.stderr)
            code = code or 1
        if code and os.environ.get("CONFORMANCE_DRIVER_DEBUG"):
            print("--- daemon stderr (tail) ---", file=sys.stderr)
            print("\n".join(daemon.stderr().splitlines()[-40:]), file=sys.stderr)
        shutil.rmtree(workdir, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
