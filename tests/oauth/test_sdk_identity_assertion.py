"""What the SDK's ``IdentityAssertionOAuthProvider`` (SEP-990 leg 2) lacks for the daemon, pinned so that an SDK
upgrade that closes a gap fails here and the choice is looked at again (docs/architecture.md, "Deliberate
deviations"). The daemon's ``IdentityAssertionGrant`` rides on its shared auth object instead, which:

* does not hold a lock across the requests it authenticates (the SDK's provider serializes every request of every
  connection to the server behind one token check);
* never raises from the auth flow (a raise ends the SDK transport's POST writer, so the whole connection): a
  refused token request becomes that one request's typed error, never quoting the token endpoint's body;
* checks the protected resource metadata against the server's URL (RFC 8707) before trusting it.

The provider is driven here by hand, request by response, with no network.
"""

from __future__ import annotations

import json

import anyio
import httpx2
import pytest
from mcp.client.auth import OAuthTokenError
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

ISSUER = "https://as.example"
SERVER = "https://mcp.example/mcp"
pytestmark = pytest.mark.anyio


class _Storage:
    async def get_tokens(self) -> None:
        return None

    async def set_tokens(self, tokens: object) -> None:
        return None

    async def get_client_info(self) -> None:
        return None

    async def set_client_info(self, info: object) -> None:
        return None


async def _id_jag(audience: str, resource: str) -> str:
    return "id-jag"


def _provider() -> IdentityAssertionOAuthProvider:
    return IdentityAssertionOAuthProvider(
        server_url=SERVER,
        storage=_Storage(),  # type: ignore[arg-type]
        client_id="client",
        client_secret="secret",
        issuer=ISSUER,
        assertion_provider=_id_jag,
    )


def _metadata(request: httpx2.Request) -> httpx2.Response:
    document = {
        "issuer": ISSUER,
        "authorization_endpoint": f"{ISSUER}/authorize",
        "token_endpoint": f"{ISSUER}/token",
        "response_types_supported": ["code"],
    }
    return httpx2.Response(200, content=json.dumps(document).encode(), request=request)


async def test_it_holds_one_lock_across_every_request_it_authenticates() -> None:
    provider = _provider()
    first = provider.async_auth_flow(httpx2.Request("POST", SERVER))
    await first.__anext__()  # the first request is out, its answer not in yet
    second_sent = anyio.Event()

    async def second() -> None:
        flow = provider.async_auth_flow(httpx2.Request("POST", SERVER))
        await flow.__anext__()
        second_sent.set()
        await flow.aclose()  # releases the lock in the task that holds it

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(second)
        await anyio.wait_all_tasks_blocked()
        assert not second_sent.is_set()  # waits for the first request's answer
        with pytest.raises(StopAsyncIteration):
            await first.asend(httpx2.Response(200, request=httpx2.Request("POST", SERVER)))
        await second_sent.wait()


async def test_it_skips_the_resource_metadata_and_raises_a_refused_token_request_quoting_its_body() -> None:
    provider = _provider()
    request = httpx2.Request("POST", SERVER)
    flow = provider.async_auth_flow(request)
    await flow.__anext__()
    discovery = await flow.asend(httpx2.Response(401, request=request))
    assert discovery.url.path.startswith("/.well-known/oauth-authorization-server")  # no RFC 8707 check first
    token_request = await flow.asend(_metadata(discovery))
    assert token_request.url == httpx2.URL(f"{ISSUER}/token")
    refused = httpx2.Response(400, content=b'{"error":"invalid_grant","echo":"BODY-TEXT"}', request=token_request)
    with pytest.raises(OAuthTokenError) as raised:
        await flow.asend(refused)
    assert "BODY-TEXT" in str(raised.value)  # raised out of the flow, with what the token endpoint said
