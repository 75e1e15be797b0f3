"""Baseline client for the MCP conformance harness: the scenario steps done directly with the official SDK.

The harness (``conformance client --command "<python> sdk_client_driver.py" --scenario NAME``) starts the
scenario's server, then runs this command with the server URL appended as the last argument, the scenario
name in ``MCP_CONFORMANCE_SCENARIO`` and the spec version in ``MCP_CONFORMANCE_PROTOCOL_VERSION``. What we do is
what the harness' own reference client does (``examples/clients/typescript/everything-client.ts``):

- every scenario: connect with the lifecycle of its version (``initialize`` through 2025-11-25, stateless
  2026-07-28 otherwise), ``tools/list``, then the scenario's steps (``steps.py``: tool calls, elicitation
  answers, every resource and prompt read where wanted);
- ``auth/*`` scenarios: through an ``OAuthClientProvider`` whose redirect handler plays the browser (GET the
  authorization URL without following redirects and read the ``code``/``state``/``iss`` off the ``Location``
  header, which points at our never-served redirect URI), with in-memory token storage and the reference
  client's CIMD URL as ``client_metadata_url``;
- pre-registered and machine clients (secret or ``private_key_jwt``) from ``MCP_CONFORMANCE_CONTEXT``.

Exit code 0 on success; non-zero with a one-line reason on stderr otherwise.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from scripts.conformance.steps import steps_for

# Same fixed CIMD URL as the harness' reference client (everything-client.ts).
CIMD_CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
REDIRECT_URI = "http://localhost:3000/callback"


class MemoryStorage:
    """The SDK's ``TokenStorage`` protocol, in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


class Browser:
    """Follows an authorization URL like a browser whose user approves at once, up to the redirect URI."""

    def __init__(self) -> None:
        self._result: Any = None
        self.authorizations = 0

    async def redirect_handler(self, authorization_url: str) -> None:
        import httpx2

        self.authorizations += 1
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as http:
            url = authorization_url
            for _ in range(10):  # follow the AS' own redirects until one lands on our redirect URI
                response = await http.get(url)
                location = response.headers.get("location")
                if response.status_code not in (301, 302, 303, 307, 308) or not location:
                    raise RuntimeError(f"authorization endpoint answered {response.status_code} without a redirect")
                url = str(response.url.join(location))
                if url.startswith(REDIRECT_URI):
                    break
            else:
                raise RuntimeError("too many redirects at the authorization endpoint")
        query = parse_qs(urlsplit(url).query)
        if "error" in query:
            raise RuntimeError(f"authorization endpoint returned error={query['error'][0]}")
        self._result = {k: v[0] for k, v in query.items()}

    async def callback_handler(self) -> Any:
        from mcp.shared.auth import AuthorizationCodeResult

        result, self._result = self._result, None
        if result is None:
            raise RuntimeError("no authorization response was captured")
        return AuthorizationCodeResult(code=result.get("code"), state=result.get("state"), iss=result.get("iss"))


def oauth_provider(server_url: str, browser: Browser, scenario: str, context: dict[str, Any]) -> Any:
    """The SDK provider the scenario needs: dynamic/CIMD registration, a pre-registered client, or a machine client.

    For a pre-registered or machine client the harness hands over ``client_id``/``client_secret`` in
    ``MCP_CONFORMANCE_CONTEXT``; a machine client runs without ``issuer`` (the SDK then uses whichever
    authorization server discovery yields).
    """
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    storage = MemoryStorage()
    if scenario.startswith("auth/client-credentials") and context.get("private_key_pem"):
        signed = SignedJWTParameters(
            issuer=context["client_id"],
            subject=context["client_id"],
            signing_key=context["private_key_pem"],
            signing_algorithm=context.get("signing_algorithm") or "ES256",
        )
        return PrivateKeyJWTOAuthProvider(
            server_url, storage, client_id=context["client_id"], assertion_provider=signed.create_assertion_provider()
        )
    if scenario.startswith("auth/client-credentials"):
        return ClientCredentialsOAuthProvider(
            server_url, storage, client_id=context["client_id"], client_secret=context["client_secret"]
        )
    if "client_id" in context:
        storage.client_info = OAuthClientInformationFull(
            client_id=context["client_id"],
            client_secret=context.get("client_secret"),
            redirect_uris=[REDIRECT_URI],
            token_endpoint_auth_method="client_secret_basic" if context.get("client_secret") else "none",
        )
    metadata = OAuthClientMetadata(
        client_name="sdk-conformance-client",
        redirect_uris=[REDIRECT_URI],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="client_secret_basic",
    )
    return OAuthClientProvider(
        server_url,
        metadata,
        storage,
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
        client_metadata_url=None if "client_id" in context else CIMD_CLIENT_METADATA_URL,
    )


async def run(server_url: str, scenario: str, context: dict[str, Any]) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import ElicitResult

    steps = steps_for(scenario)
    modern = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") == "2026-07-28"

    async def elicit(_ctx: Any, params: Any) -> Any:
        if steps.elicit is None:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content=steps.elicit(params.requested_schema))

    browser = Browser()
    auth = oauth_provider(server_url, browser, scenario, context) if scenario.startswith("auth/") else None
    async with httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(30, read=300)) as http:
        transport = streamable_http_client(server_url, http_client=http)
        mode = "2026-07-28" if modern else "legacy"
        async with Client(transport, mode=mode, raise_exceptions=True, elicitation_callback=elicit) as client:
            listed = await client.list_tools()
            tools = {tool.name: tool.input_schema for tool in listed.tools}
            print(f"tools: {sorted(tools)}", file=sys.stderr)
            for name, arguments in steps.calls(tools, context):
                result = await client.call_tool(name, arguments)
                if result.is_error:
                    raise RuntimeError(f"tool {name} returned isError: {result.content}")
                print(f"called {name}: {result.content}", file=sys.stderr)
            if steps.everything:
                await exercise_everything(client)
    print(f"ok (authorizations: {browser.authorizations})", file=sys.stderr)


async def exercise_everything(client: Any) -> None:
    """Read every resource and get every prompt the server lists."""
    for resource in (await client.list_resources()).resources:
        await client.read_resource(str(resource.uri))
    for prompt in (await client.list_prompts()).prompts:
        arguments = {a.name: "x" for a in prompt.arguments or [] if a.required}
        await client.get_prompt(prompt.name, arguments)


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: sdk_client_driver.py SERVER_URL", file=sys.stderr)
        return 2
    server_url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    try:
        anyio.run(run, server_url, scenario, json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}"))
    except BaseException as exc:  # report anything, including exception groups
        if os.environ.get("CONFORMANCE_DRIVER_DEBUG"):
            traceback.print_exc()
        print(f"sdk driver FAILED ({scenario}): {describe(exc)}", file=sys.stderr)
        return 1
    return 0


def describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


if __name__ == "__main__":
    sys.exit(main())
