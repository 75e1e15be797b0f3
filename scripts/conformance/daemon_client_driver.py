"""Client for the MCP conformance harness that makes the scenario's calls *through the daemon*.

The harness (``conformance client --command "<python> daemon_client_driver.py" --scenario NAME``) starts the
scenario's server, then runs this command with the server URL appended as the last argument, the scenario
name in ``MCP_CONFORMANCE_SCENARIO`` and, for scenarios with pre-registered credentials, the client id and
secret (or private key) in ``MCP_CONFORMANCE_CONTEXT``. This driver behaves like a desktop host of the daemon:

1. spawn ``python -m app_server --data-dir <tmp>`` (``testing/daemon_client.py``), ``initialize``; for ``auth/*``
   scenarios with ``--oauth-client-metadata-url`` set to the reference client's client ID metadata document (the
   daemon uses it where the authorization server supports one, and registers dynamically elsewhere);
2. ``mcpServer/create {name, config: {type: "http", url}}`` — with ``oauth: {}`` for ``auth/*`` scenarios,
   ``oauth: {clientId, clientSecretEnvVar}`` when the context hands over a pre-registered client, and
   ``oauth: {grant: "clientCredentials", clientId, clientSecretEnvVar | privateKeyEnvVar (+ signingAlgorithm),
   expectedIssuer}`` for ``auth/client-credentials-*``, ``oauth: {grant: "identityAssertion", clientId,
   clientSecretEnvVar, expectedIssuer, idp: {tokenEndpoint, clientId, idTokenFile}}`` for
   ``auth/enterprise-managed-authorization`` (the user's ID token written to a file, as the host's single sign-on
   keeps it) and ``oauth: {grant: "jwtBearer", clientId, expectedIssuer, assertionFile}`` for
   ``auth/wif-jwt-bearer`` (the workload's JWT in a file, as its platform keeps it). Secrets and keys reach the
   daemon only through its environment. The expected issuer is what the host's administrator would enter; here
   the driver looks it up once from the server's protected-resource metadata and the authorization server's
   metadata (the harness gives no other source);
3. when the server needs a login (an ``auth/*`` scenario with a user and a browser, or ``mcpServer/start`` or a
   call failing with ``authRequired``/``reauthenticationRequired`` for such a server):
   ``mcpServer/oauth/login {name}`` → ``authorizationUrl``; play the browser (GET it without following
   redirects, then GET each ``Location`` until the daemon's loopback callback has answered) and wait for
   ``mcpServer/oauthLogin/completed``;
4. ``mcpServer/start {name}``, then the scenario's steps (``steps.py``, the harness' reference client's): tool
   calls through ``thread/start`` + ``mcpServer/tool/call``, answering ``mcpServer/elicitation/request`` as a
   user would (the form pre-filled with its defaults, or what the scenario asks to confirm), and reading every
   resource and prompt where the scenario wants them exercised.

Host behaviour on typed refusals, as SPEC §5/§6 describe it:
- ``-32012 originNotAllowed`` (a login, or a machine client's start): the host asks the user whether to sign
  in through ``error.data.origin``; the user consents, the host adds it to ``oauth.allowedOrigins`` with
  ``mcpServer/update`` and retries;
- ``insufficientScope`` on a tool call: the host logs in again *without naming scopes* (the daemon asks for
  the challenged scopes together with the previous ones) and retries the call once;
- ``authRequired`` or ``reauthenticationRequired`` on a start or a call: the host logs in and retries once.

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
from urllib.parse import urljoin, urlsplit
from urllib.request import HTTPRedirectHandler, Request, build_opener, urlopen

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scripts.conformance.steps import Steps, steps_for  # noqa: E402
from testing.daemon_client import Daemon, DaemonError  # noqa: E402

SERVER = "conformance"
TIMEOUT = 25.0
AUTH_REASONS = {"authRequired", "reauthenticationRequired"}
MACHINE_GRANTS = {"clientCredentials", "identityAssertion", "jwtBearer"}
"""Grants without a browser login: the daemon fetches the token when connecting."""
SECRET_VAR = "CONFORMANCE_CLIENT_SECRET"
KEY_VAR = "CONFORMANCE_PRIVATE_KEY"
CONSENTS = 4
CIMD_CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""The reference client's client ID metadata document (everything-client.ts)."""
ELICITATION = "mcpServer/elicitation/request"


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


def with_consent(daemon: Daemon, config: dict[str, Any], method: str, params: Any, timeout: float = TIMEOUT) -> Any:
    """``method``, retried after the user consents to each OAuth origin the daemon refuses (``originNotAllowed``)."""
    for _ in range(CONSENTS):
        try:
            return call(daemon, method, params, timeout)
        except DaemonError as exc:
            origin = exc.data.get("origin")
            if exc.reason != "originNotAllowed" or not origin or origin in config["oauth"].get("allowedOrigins", []):
                raise
            # The host asks the user "allow sign-in through <origin>?"; the user says yes.
            print(f"{method} refused for origin {origin}; the user consents, adding it", file=sys.stderr)
            config["oauth"].setdefault("allowedOrigins", []).append(origin)
            call(daemon, "mcpServer/update", {"name": SERVER, "config": config})
    raise DriverFailure(f"{method} kept being refused by the origin policy")


def login(daemon: Daemon, config: dict[str, Any]) -> None:
    """A login as a host starts it: never naming scopes (the daemon knows the configured and challenged ones)."""
    started = with_consent(daemon, config, "mcpServer/oauth/login", {"name": SERVER, "timeoutSecs": 60})
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


def start(daemon: Daemon, config: dict[str, Any]) -> Any:
    """``mcpServer/start``; a start refused for want of a login logs in (switching an unexpected OAuth server to
    ``oauth: {}``) and starts again, once."""
    try:
        return _start(daemon, config)
    except DaemonError as exc:
        if exc.reason not in AUTH_REASONS or config.get("oauth", {}).get("grant") in MACHINE_GRANTS:
            raise
        if "oauth" not in config:  # detected: the server wants OAuth although the scenario name did not say so
            config["oauth"] = {}
            call(daemon, "mcpServer/update", {"name": SERVER, "config": config})
        print(f"start refused ({exc.reason}); logging in", file=sys.stderr)
        login(daemon, config)
        return _start(daemon, config)


def _start(daemon: Daemon, config: dict[str, Any]) -> Any:
    if "oauth" in config:
        return with_consent(daemon, config, "mcpServer/start", {"name": SERVER}, timeout=60)
    return call(daemon, "mcpServer/start", {"name": SERVER}, timeout=60)


def lookup_issuer(url: str) -> str:
    """What an administrator enters as ``expectedIssuer``: the issuer of the server's authorization server."""
    parts = urlsplit(url)
    prm_url = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
    with urlopen(prm_url, timeout=TIMEOUT) as response:
        server = json.load(response)["authorization_servers"][0].rstrip("/")
    as_parts = urlsplit(server)
    metadata_url = f"{as_parts.scheme}://{as_parts.netloc}/.well-known/oauth-authorization-server{as_parts.path}"
    with urlopen(metadata_url, timeout=TIMEOUT) as response:
        return str(json.load(response)["issuer"])


def oauth_config(scenario: str, url: str, context: dict[str, Any], workdir: Path) -> dict[str, Any] | None:
    if not scenario.startswith("auth/"):
        return None
    if scenario == "auth/enterprise-managed-authorization":
        # The host's single sign-on has signed the user in and keeps the ID token in a file the daemon reads.
        id_token_file = workdir / "id_token"
        id_token_file.write_text(str(context["idp_id_token"]))
        return {
            "grant": "identityAssertion",
            "clientId": context["client_id"],
            "clientSecretEnvVar": SECRET_VAR,
            "expectedIssuer": lookup_issuer(url),
            "idp": {
                "tokenEndpoint": context["idp_token_endpoint"],
                "clientId": context["idp_client_id"],
                "idTokenFile": str(id_token_file),
            },
        }
    if scenario == "auth/wif-jwt-bearer":
        # The workload platform keeps its JWT in a file (as Kubernetes projects a service account token).
        assertion_file = workdir / "workload.jwt"
        assertion_file.write_text(str(context["valid_jwt"]))
        oauth = {"grant": "jwtBearer", "expectedIssuer": lookup_issuer(url), "assertionFile": str(assertion_file)}
        return {**oauth, **({"clientId": context["client_id"]} if context.get("client_id") else {})}
    if "client_id" not in context:
        return {}
    oauth: dict[str, Any] = {"clientId": context["client_id"]}
    if context.get("client_secret"):
        oauth["clientSecretEnvVar"] = SECRET_VAR
    if context.get("private_key_pem"):
        oauth["privateKeyEnvVar"] = KEY_VAR
        if context.get("signing_algorithm"):
            oauth["signingAlgorithm"] = context["signing_algorithm"]
    if scenario.startswith("auth/client-credentials"):
        oauth.update(grant="clientCredentials", expectedIssuer=lookup_issuer(url))
    return oauth


def call_tool(
    daemon: Daemon, config: dict[str, Any], thread_id: str, tool: str, arguments: dict[str, Any], steps: Steps
) -> Any:
    """One ``mcpServer/tool/call``, answering its elicitations as the user would; after ``insufficientScope`` or
    a lost login the host logs in again (without naming scopes) and retries once."""
    params = {"threadId": thread_id, "server": SERVER, "tool": tool, "arguments": arguments}
    for attempt in (1, 2):
        request_id = daemon.start_request("mcpServer/tool/call", params)

        def answer_or_ask(message: dict[str, Any], request_id: Any = request_id) -> bool:
            mine = message.get("id") == request_id and "method" not in message
            return mine or (message.get("method") == ELICITATION and "id" in message)

        while "method" in (message := daemon.wait_for(answer_or_ask, timeout=60)):
            form = message["params"]
            if steps.elicit is None:
                daemon.answer(message["id"], {"action": "decline"})
            else:
                content = steps.elicit(form["requestedSchema"])
                print(f"elicitation for {tool}: accepting with {sorted(content)}", file=sys.stderr)
                daemon.answer(message["id"], {"action": "accept", "content": content})
        if "error" not in message:
            return message["result"]
        error = DaemonError(message["error"])
        machine = config.get("oauth", {}).get("grant") in MACHINE_GRANTS
        if attempt == 2 or machine or (error.reason != "insufficientScope" and error.reason not in AUTH_REASONS):
            raise error
        print(f"tool call refused ({error.reason}); logging in again", file=sys.stderr)
        login(daemon, config)
    raise AssertionError("unreachable")


def exercise_everything(daemon: Daemon, thread_id: str) -> None:
    """Read every resource and get every prompt the server lists (what a settings page's previews do)."""
    listed = call(daemon, "mcpResource/list", {"server": SERVER, "threadId": thread_id})
    for resource in listed["resources"]:
        call(daemon, "mcpServer/resource/read", {"server": SERVER, "uri": resource["uri"], "threadId": thread_id})
    for prompt in call(daemon, "mcpPrompt/list", {"server": SERVER, "threadId": thread_id})["data"]:
        arguments = {a["name"]: "x" for a in prompt.get("arguments") or [] if a.get("required")}
        call(daemon, "mcpPrompt/get", {"server": SERVER, "name": prompt["name"], "arguments": arguments,
                                       "threadId": thread_id})


def run(daemon: Daemon, url: str, scenario: str, context: dict[str, Any], workdir: Path) -> None:
    daemon.initialize()
    config: dict[str, Any] = {"type": "http", "url": url}
    oauth = oauth_config(scenario, url, context, workdir)
    if oauth is not None:
        config["oauth"] = oauth
    call(daemon, "mcpServer/create", {"name": SERVER, "config": config})
    if oauth is not None and oauth.get("grant") not in MACHINE_GRANTS:
        login(daemon, config)
    start(daemon, config)
    status = call(daemon, "mcpServerStatus/list", {"serverName": SERVER})["data"][0]
    tools = {name: tool.get("inputSchema") or {} for name, tool in (status.get("tools") or {}).items()}
    print(f"server {status['runtimeStatus']}, tools: {sorted(tools)}", file=sys.stderr)
    if status.get("lastError"):
        print(f"status lastError: {json.dumps(status['lastError'])}", file=sys.stderr)

    steps = steps_for(scenario)
    calls = steps.calls(tools, context)
    if not calls and not steps.everything:
        return
    thread_id = call(daemon, "thread/start", {"servers": [SERVER]})["thread"]["id"]
    for tool, arguments in calls:
        result = call_tool(daemon, config, thread_id, tool, arguments, steps)
        if result.get("isError"):
            raise DriverFailure(f"tool {tool} returned isError: {json.dumps(result.get('content'))[:300]}")
        print(f"called {tool}: {json.dumps(result.get('content'))[:300]}", file=sys.stderr)
    if steps.everything:
        exercise_everything(daemon, thread_id)


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
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    env = {k: v for k, v in os.environ.items() if k != "MCP_CONFORMANCE_CONTEXT"}
    if context.get("client_secret"):
        env[SECRET_VAR] = str(context["client_secret"])
    if context.get("private_key_pem"):
        env[KEY_VAR] = str(context["private_key_pem"])
    workdir = Path(tempfile.mkdtemp(prefix="conformance-daemon-"))
    # The files the host keeps credentials in (the ID token, the workload's JWT) live in the work folder.
    auth = ("--oauth-client-metadata-url", CIMD_CLIENT_METADATA_URL, "--credential-dir", str(workdir))
    args = auth if scenario.startswith("auth/") else ()
    daemon = Daemon(workdir / "data", env=env, args=args)
    code = 0
    started = time.monotonic()
    try:
        run(daemon, url, scenario, context, workdir)
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
