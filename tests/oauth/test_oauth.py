"""OAuth: credential envelope, loopback callback, login against the SDK-protected fixture, runtime auth."""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx2
import pytest
import structlog

from mcp_runtime.config.rules import parse_server_config
from mcp_runtime.oauth import OAuthLogins, auth_status, oauth_auth
from mcp_runtime.oauth.callback import CallbackHub
from mcp_runtime.oauth.credentials import CredentialStore, StoredTokenStorage
from mcp_runtime.session.refusal import REASON_MARKER
from protocol.jsonrpc import AppError
from protocol.server import ErrorInfo
from scripts.smoke.fixtures.launch import oauth_fixture

pytestmark = pytest.mark.anyio

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def oauth_url() -> Iterator[str]:
    with oauth_fixture("--token-ttl", "2") as url:
        yield url


def http_config(url: str, **oauth: Any) -> Any:
    return parse_server_config("s", {"type": "http", "url": url, "oauth": oauth})


class Completion:
    """Collects the ``on_done`` calls of logins; waits on state, not on sleeps."""

    def __init__(self) -> None:
        self.calls: list[tuple[bool, ErrorInfo | None]] = []
        self._event = anyio.Event()

    def __call__(self, success: bool, error: ErrorInfo | None) -> None:
        self.calls.append((success, error))
        self._event.set()

    async def wait(self, timeout: float = 20.0) -> tuple[bool, ErrorInfo | None]:
        with anyio.fail_after(timeout):
            await self._event.wait()
        return self.calls[0]


async def act_as_browser(authorization_url: str) -> httpx2.Response:
    """Follow the authorization URL like a browser, one hop at a time; return the callback's answer."""
    async with httpx2.AsyncClient(follow_redirects=False) as browser:
        authorize = await browser.get(authorization_url)
        assert authorize.status_code == 302
        return await browser.get(authorize.headers["location"])


async def login(data_dir: Path, url: str, **kwargs: Any) -> tuple[bool, ErrorInfo | None]:
    done = Completion()
    async with OAuthLogins(data_dir) as logins:
        started = await logins.start("s", url, on_done=done, **kwargs)
        await act_as_browser(started.authorization_url)
        return await done.wait()


# --- credential envelope -------------------------------------------------------------------------------------


def test_envelope_is_versioned_private_and_keyed_by_exact_url(data_dir: Path) -> None:
    store = CredentialStore(data_dir)
    store.put("s", "https://a.example/mcp", {"tokens": {"access_token": "A"}})
    store.put("s", "https://b.example/mcp", {"tokens": {"access_token": "B"}})
    document = json.loads((data_dir / "credentials.json").read_text())
    assert document["version"] == 1
    assert set(document["entries"]) == {"s https://a.example/mcp", "s https://b.example/mcp"}
    assert document["entries"]["s https://a.example/mcp"]["updatedAt"]
    assert stat.S_IMODE(os.stat(data_dir / "credentials.json").st_mode) == 0o600
    assert store.get("s", "https://a.example/mcp")["tokens"]["access_token"] == "A"  # type: ignore[index]
    assert store.get("s", "https://a.example/mcp/") is None  # exact URL, not a prefix or a normalization
    assert store.get("t", "https://a.example/mcp") is None
    assert not [p for p in data_dir.iterdir() if p.name.endswith(".tmp")]
    store.delete("s")
    assert json.loads((data_dir / "credentials.json").read_text())["entries"] == {}


def test_envelope_never_overwrites_an_unreadable_file(data_dir: Path) -> None:
    path = data_dir / "credentials.json"
    path.write_text('{"version": 2, "entries": {}}')
    store = CredentialStore(data_dir)
    assert store.get("s", "https://a.example/mcp") is None
    with pytest.raises(AppError) as info:
        store.put("s", "https://a.example/mcp", {"tokens": {"access_token": "A"}})
    assert info.value.reason == "storeCorrupted"
    assert path.read_text() == '{"version": 2, "entries": {}}'


async def test_token_storage_protocol_round_trip(data_dir: Path) -> None:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    storage = StoredTokenStorage(CredentialStore(data_dir), "s", "https://a.example/mcp")
    assert await storage.get_tokens() is None
    await storage.set_tokens(OAuthToken(access_token="A", expires_in=60, refresh_token="R"))
    await storage.set_client_info(OAuthClientInformationFull(client_id="c", redirect_uris=None))
    assert (await storage.get_tokens()).refresh_token == "R"  # type: ignore[union-attr]
    assert (await storage.get_client_info()).client_id == "c"  # type: ignore[union-attr]
    entry = storage.entry()
    assert entry is not None and entry["expiresAt"] == pytest.approx(time.time() + 60, abs=5)
    other = StoredTokenStorage(CredentialStore(data_dir), "s", "https://other.example/mcp")
    assert await other.get_tokens() is None


def test_auth_status(data_dir: Path) -> None:
    stdio = parse_server_config("s", {"command": "x"})
    assert auth_status("s", "", stdio, data_dir) == "unsupported"
    bearer = parse_server_config("s", {"type": "http", "url": "https://a.example/mcp", "bearerTokenEnvVar": "T"})
    assert auth_status("s", "https://a.example/mcp", bearer, data_dir) == "bearerToken"
    plain = parse_server_config("s", {"type": "http", "url": "https://a.example/mcp"})
    assert auth_status("s", "https://a.example/mcp", plain, data_dir) == "unknown"
    config = http_config("https://a.example/mcp")
    assert auth_status("s", "https://a.example/mcp", config, data_dir) == "notLoggedIn"
    CredentialStore(data_dir).put("s", "https://a.example/mcp", {"tokens": {"access_token": "A"}})
    assert auth_status("s", "https://a.example/mcp", config, data_dir) == "oAuth"
    assert auth_status("s", "https://a.example/other", config, data_dir) == "notLoggedIn"
    assert oauth_auth("s", "https://a.example/mcp", plain, data_dir, os.environ) is not None  # stored tokens apply
    assert oauth_auth("s", "https://a.example/mcp", bearer, data_dir, os.environ) is None
    assert oauth_auth("s", "https://b.example/mcp", plain, data_dir, os.environ) is None


# --- loopback callback ---------------------------------------------------------------------------------------


async def test_callback_fixed_path_state_and_one_shot() -> None:
    async with anyio.create_task_group() as tg, httpx2.AsyncClient() as client:
        hub = CallbackHub(tg)
        async with hub.attach(None) as callback:
            callback.expect_state("s1")
            base = callback.redirect_uri.removesuffix("/oauth/callback")
            assert callback.redirect_uri.startswith("http://127.0.0.1:") and base.rsplit(":", 1)[1].isdigit()
            assert (await client.get(f"{base}/oauth/callback/x?code=x&state=s1")).status_code == 404
            assert (await client.post(f"{base}/oauth/callback?code=x&state=s1")).status_code == 405
            assert (await client.get(f"{base}/oauth/callback?code=x&state=other")).status_code == 400
            assert (await client.get(f"{base}/oauth/callback?code=x")).status_code == 400
            assert not callback.done.is_set()  # a callback of nobody's state reaches no login
            assert (await client.get(f"{base}/oauth/callback?code=the-code&state=s1")).status_code == 200
            assert (await client.get(f"{base}/oauth/callback?code=again&state=s1")).status_code == 410
            result = await callback.wait()
            assert (result.code, result.state) == ("the-code", "s1")
        with pytest.raises(httpx2.ConnectError):  # the listener closed with its last login
            await client.get(f"{base}/oauth/callback?code=x&state=s1")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("error=access_denied&error_description=secret-ish&state=s1", "denied"),
        ("error=server_error&state=s1", "returned server_error"),
        ("state=s1", "no code"),
    ],
)
async def test_callback_failures(query: str, message: str) -> None:
    async with anyio.create_task_group() as tg, httpx2.AsyncClient() as client:
        async with CallbackHub(tg).attach(None) as callback:
            callback.expect_state("s1")
            assert (await client.get(f"{callback.redirect_uri}?{query}")).status_code == 400
            with pytest.raises(AppError) as info:
                await callback.wait()
    assert info.value.reason == "oauthFailed"
    assert message in info.value.message
    assert "secret-ish" not in json.dumps(info.value.to_error())


async def test_logins_on_one_port_share_it_and_are_told_apart_by_state() -> None:
    async with anyio.create_task_group() as tg, httpx2.AsyncClient() as client:
        hub = CallbackHub(tg)
        async with hub.attach(None) as probe:
            port = int(probe.redirect_uri.split(":")[2].split("/")[0])
        async with hub.attach(port) as first, hub.attach(port) as second:
            assert first.redirect_uri == second.redirect_uri == f"http://127.0.0.1:{port}/oauth/callback"
            first.expect_state("state-a")
            second.expect_state("state-b")
            assert (await client.get(f"{second.redirect_uri}?code=b&state=state-b")).status_code == 200
            assert (await second.wait()).code == "b" and not first.done.is_set()
            assert (await client.get(f"{first.redirect_uri}?code=a&state=state-a")).status_code == 200
            assert (await first.wait()).code == "a"
        with pytest.raises(httpx2.ConnectError):
            await client.get(f"http://127.0.0.1:{port}/oauth/callback?code=x&state=state-a")


async def test_a_port_another_program_holds_is_callback_port_in_use() -> None:
    holder = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = holder.extra(anyio.abc.SocketAttribute.local_port)
    try:
        async with anyio.create_task_group() as tg:
            with pytest.raises(AppError) as info:
                async with CallbackHub(tg).attach(port):
                    pass
    finally:
        await holder.aclose()
    assert (info.value.code, info.value.reason, info.value.details) == (-32012, "callbackPortInUse", {"port": port})


# --- login against the fixture -------------------------------------------------------------------------------


async def call_whoami(url: str, auth: httpx2.Auth) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(auth=auth, follow_redirects=False) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy", read_timeout_seconds=10) as client,
    ):
        result = await client.call_tool("whoami", {})
        assert not result.is_error
        return json.loads(result.content[0].text)  # type: ignore[union-attr]


async def test_login_then_runtime_refresh_and_restart_reuse(data_dir: Path, oauth_url: str) -> None:
    captured: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = captured.append  # type: ignore[method-assign]
    logging.getLogger().addHandler(handler)
    try:
        with structlog.testing.capture_logs() as logs:
            assert await login(data_dir, oauth_url) == (True, None)
            entry = CredentialStore(data_dir).get("s", oauth_url)
            assert entry is not None and entry["tokens"]["access_token"].startswith("at-")
            assert entry["metadata"]["authorizationServer"]["token_endpoint"].endswith("/token")
            first_access = entry["tokens"]["access_token"]

            config = http_config(oauth_url)
            assert auth_status("s", oauth_url, config, data_dir) == "oAuth"
            auth = oauth_auth("s", oauth_url, config, data_dir, os.environ)
            assert auth is not None
            who = await call_whoami(oauth_url, auth)
            assert who["subject"] == "fixture-user" and who["scopes"] == ["mcp"]

            # Let the 2 s token expire, then a new provider (a restart) refreshes from the stored entry.
            deadline = entry["expiresAt"]
            await anyio.sleep(max(0.0, deadline - time.time()) + 0.2)
            restarted = oauth_auth("s", oauth_url, config, data_dir, os.environ)
            assert restarted is not None
            assert (await call_whoami(oauth_url, restarted))["subject"] == "fixture-user"
            refreshed = CredentialStore(data_dir).get("s", oauth_url)
            assert refreshed is not None and refreshed["tokens"]["access_token"] != first_access
    finally:
        logging.getLogger().removeHandler(handler)
    secrets_ = [first_access, entry["tokens"]["refresh_token"], refreshed["tokens"]["access_token"], "code=", "state="]
    text = json.dumps(logs, default=str) + "\n".join(r.getMessage() for r in captured)
    assert not [s for s in secrets_ if s in text]
    assert any(e["event"] == "oauth_login_completed" for e in logs)


async def test_refresh_failure_is_reauthentication_required(data_dir: Path, oauth_url: str) -> None:
    assert await login(data_dir, oauth_url) == (True, None)
    store = CredentialStore(data_dir)
    store.update(
        "s",
        oauth_url,
        lambda e: {**e, "expiresAt": time.time() - 1, "tokens": {**e["tokens"], "refresh_token": "rt-revoked"}},
    )
    auth = oauth_auth("s", oauth_url, http_config(oauth_url), data_dir, os.environ)
    async with httpx2.AsyncClient(auth=auth) as client:
        response = await client.post(oauth_url, json=PING, headers=MCP_HEADERS)
    assert response.status_code == 400
    assert response.json()["error"]["data"] == {REASON_MARKER: "reauthenticationRequired"}


async def test_runtime_without_login_is_auth_required_and_never_logs_in(data_dir: Path, oauth_url: str) -> None:
    auth = oauth_auth("s", oauth_url, http_config(oauth_url), data_dir, os.environ)
    assert auth is not None
    async with httpx2.AsyncClient(auth=auth) as client:
        response = await client.post(oauth_url, json=PING, headers=MCP_HEADERS)
    assert response.json()["error"]["data"] == {REASON_MARKER: "authRequired"}
    assert response.json()["error"]["code"] == -32016
    assert not (data_dir / "credentials.json").exists()  # no registration, nothing stored


async def test_login_for_another_url_does_not_leak(data_dir: Path, oauth_url: str) -> None:
    assert await login(data_dir, oauth_url) == (True, None)
    other = oauth_url + "/"
    assert auth_status("s", other, http_config(other), data_dir) == "notLoggedIn"


async def test_denied(data_dir: Path) -> None:
    with oauth_fixture("--deny") as url:
        success, error = await login(data_dir, url)
    assert not success and error is not None
    assert (error.reason, error.message) == ("oauthFailed", "the authorization was denied")
    assert not (data_dir / "credentials.json").exists()


async def test_issuer_mismatch(data_dir: Path) -> None:
    with oauth_fixture("--wrong-iss") as url:
        success, error = await login(data_dir, url)
    assert not success and error is not None
    assert error.reason == "oauthFailed" and "issuer" in error.message


async def test_allowed_origins_restrict_the_authorization_server(data_dir: Path) -> None:
    with oauth_fixture("--issuer-host", "localhost") as url:
        done = Completion()
        async with OAuthLogins(data_dir) as logins:
            with pytest.raises(AppError) as info:
                await logins.start("s", url, allowed_origins=[], on_done=done)
        assert info.value.reason == "originNotAllowed" and info.value.details["origin"].startswith("http://localhost:")
        assert info.value.code == -32012
        assert done.calls == []
        allowed = info.value.details["origin"].rsplit(":", 1)[0] + ":" + url.split(":")[2].split("/")[0]
        assert await login(data_dir, url, allowed_origins=[allowed]) == (True, None)
        async with OAuthLogins(data_dir) as logins:  # absent = the MCP origin only
            with pytest.raises(AppError) as info:
                await logins.start("s", url, on_done=done)
        assert info.value.reason == "originNotAllowed"


async def test_timeout_and_second_login_cancels_first(data_dir: Path, oauth_url: str) -> None:
    async with OAuthLogins(data_dir) as logins:
        timed = Completion()
        await logins.start("s", oauth_url, on_done=timed, timeout_s=1)
        success, error = await timed.wait()
        assert not success and error is not None and error.reason == "timeout"

        first, second = Completion(), Completion()
        started = await logins.start("s", oauth_url, on_done=first)
        replaced = await logins.start("s", oauth_url, on_done=second)
        assert first.calls and first.calls[0][1] is not None and first.calls[0][1].reason == "cancelled"
        # The first login's callback is gone; the second one completes.
        with pytest.raises(httpx2.ConnectError):
            await act_as_browser(started.authorization_url)
        await act_as_browser(replaced.authorization_url)
        assert await second.wait() == (True, None)
        assert len(first.calls) == 1


async def test_invalid_timeout_and_insecure_url(data_dir: Path) -> None:
    async with OAuthLogins(data_dir) as logins:
        with pytest.raises(AppError) as info:
            await logins.start("s", "http://127.0.0.1:1/mcp", on_done=Completion(), timeout_s=601)
        assert info.value.reason == "invalidParams"
        with pytest.raises(AppError) as info:
            await logins.start("s", "http://example.com/mcp", on_done=Completion())
        assert info.value.reason == "insecureUrl"


# --- runtime auth, in process ---------------------------------------------------------------------------------
# These exercise only the httpx2.Auth layer (token refresh and refusal rules) over HTTP: the protected endpoint
# answers bare status codes, no MCP message is faked. The MCP side is covered against the real OAuth fixture.


def mock_server(
    handler: Callable[[httpx2.Request], httpx2.Response],
    data_dir: Path,
    *,
    expired: bool,
    allowed_origins: list[str] | None = None,
) -> tuple[httpx2.Auth, str]:
    url = "https://mcp.example/mcp"
    CredentialStore(data_dir).put(
        "s",
        url,
        {
            "tokens": {"access_token": "old", "refresh_token": "r1", "expires_in": 60, "token_type": "Bearer"},
            "clientInfo": {"client_id": "c", "token_endpoint_auth_method": "none"},
            "expiresAt": time.time() - 1 if expired else time.time() + 60,
            "metadata": {
                "authorizationServer": {
                    "issuer": "https://mcp.example",
                    "authorization_endpoint": "https://mcp.example/authorize",
                    "token_endpoint": "https://mcp.example/token",
                }
            },
        },
    )
    oauth = {} if allowed_origins is None else {"allowedOrigins": allowed_origins}
    auth = oauth_auth("s", url, http_config(url, **oauth), data_dir, os.environ)
    assert auth is not None
    return auth, url


async def fixture_call(url: str, auth: httpx2.Auth, tool: str) -> Any:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(auth=auth, follow_redirects=False) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy", read_timeout_seconds=10) as client,
    ):
        return await client.call_tool(tool, {})


def authorized(response: httpx2.Response) -> bool:
    """Past the server's token check: a bare ping without a session is refused by MCP, not by auth."""
    return response.status_code not in (401, 403) and REASON_MARKER not in response.text


async def refreshes(url: str, auth: httpx2.Auth) -> int:
    result = await fixture_call(url, auth, "stats")
    return int(result.structured_content["refreshes"])  # type: ignore[index]


async def test_concurrent_refreshes_are_merged(data_dir: Path, oauth_url: str) -> None:
    assert await login(data_dir, oauth_url) == (True, None)
    auth = oauth_auth("s", oauth_url, http_config(oauth_url), data_dir, os.environ)
    assert auth is not None
    before = await refreshes(oauth_url, auth)
    CredentialStore(data_dir).update("s", oauth_url, lambda e: {**e, "expiresAt": time.time() - 1})
    answers: list[httpx2.Response] = []
    async with httpx2.AsyncClient(auth=auth) as client:

        async def one() -> None:
            answers.append(await client.post(oauth_url, json=PING, headers=MCP_HEADERS))

        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(one)
    assert len(answers) == 8 and all(authorized(a) for a in answers)
    assert await refreshes(oauth_url, auth) == before + 1
    stats = (await fixture_call(oauth_url, auth, "stats")).structured_content
    assert stats is not None and stats["reusedRefreshTokens"] == 0


async def test_401_with_a_valid_looking_token_refreshes_once(data_dir: Path, oauth_url: str) -> None:
    assert await login(data_dir, oauth_url) == (True, None)
    auth = oauth_auth("s", oauth_url, http_config(oauth_url), data_dir, os.environ)
    assert auth is not None
    before = await refreshes(oauth_url, auth)
    CredentialStore(data_dir).update(
        "s", oauth_url, lambda e: {**e, "tokens": {**e["tokens"], "access_token": "at-revoked"}}
    )
    async with httpx2.AsyncClient(auth=auth) as client:
        assert authorized(await client.post(oauth_url, json=PING, headers=MCP_HEADERS))
    assert await refreshes(oauth_url, auth) == before + 1


async def test_insufficient_scope_is_typed_and_remembered_for_step_up(data_dir: Path, oauth_url: str) -> None:
    assert await login(data_dir, oauth_url) == (True, None)
    auth = oauth_auth("s", oauth_url, http_config(oauth_url), data_dir, os.environ)
    assert auth is not None
    with pytest.raises(Exception) as info:
        await fixture_call(oauth_url, auth, "admin")
    assert "'mcpAppServerReason': 'insufficientScope', 'requiredScopes': ['mcp', 'extra']" in repr(info.value)
    store = CredentialStore(data_dir)
    entry = store.get("s", oauth_url)
    assert entry is not None and entry["challengedScopes"] == ["mcp", "extra"] and entry["requestedScopes"] == ["mcp"]
    assert store.step_up_scopes("s", oauth_url) == ["mcp", "extra"]


async def serve_raw(routes: dict[bytes, bytes | None], task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
    """A loopback HTTP/1.1 endpoint answering by request-line prefix (None: never answer); default 401."""

    async def serve(stream: Any) -> None:
        async with stream:
            head = b""
            while b"\r\n\r\n" not in head:
                head += await stream.receive()
            answer = next((a for prefix, a in routes.items() if head.startswith(prefix)), RAW_401)
            if answer is None:
                await anyio.sleep_forever()
            await stream.send(answer)

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    task_status.started(listener.extra(anyio.abc.SocketAttribute.local_port))
    await listener.serve(serve)


RAW_401 = b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def store_expired(data_dir: Path, port: int) -> str:
    url = f"http://127.0.0.1:{port}/mcp"
    CredentialStore(data_dir).put(
        "s",
        url,
        {
            "tokens": {"access_token": "old", "refresh_token": "r1", "token_type": "Bearer"},
            "clientInfo": {"client_id": "c", "token_endpoint_auth_method": "none"},
            "expiresAt": time.time() - 1,
            "metadata": {
                "authorizationServer": {
                    "issuer": f"http://127.0.0.1:{port}",
                    "authorization_endpoint": f"http://127.0.0.1:{port}/authorize",
                    "token_endpoint": f"http://127.0.0.1:{port}/token",
                }
            },
        },
    )
    return url


async def test_a_redirecting_token_endpoint_fails_the_refresh(data_dir: Path) -> None:
    redirect = b"HTTP/1.1 302 Found\r\nLocation: https://evil.example/token\r\nContent-Length: 0\r\n\r\n"
    async with anyio.create_task_group() as tg:
        port = await tg.start(serve_raw, {b"POST /token": redirect})
        url = store_expired(data_dir, port)
        auth = oauth_auth("s", url, http_config(url), data_dir, os.environ)
        async with httpx2.AsyncClient(auth=auth) as client:
            response = await client.post(url, json=PING)
        tg.cancel_scope.cancel()
    assert response.json()["error"]["data"] == {REASON_MARKER: "reauthenticationRequired"}


async def test_a_refresh_is_bounded_by_the_startup_timeout(data_dir: Path) -> None:
    """A token endpoint that never answers: the refresh gives up after ``startupTimeoutMs``, typed."""
    async with anyio.create_task_group() as tg:
        port = await tg.start(serve_raw, {b"POST /token": None})
        url = store_expired(data_dir, port)
        config = parse_server_config("s", {"type": "http", "url": url, "oauth": {}, "startupTimeoutMs": 300})
        auth = oauth_auth("s", url, config, data_dir, os.environ)
        with anyio.fail_after(20):
            async with httpx2.AsyncClient(auth=auth, timeout=None) as client:
                response = await client.post(url, json=PING)
        tg.cancel_scope.cancel()
    assert response.json()["error"]["data"] == {REASON_MARKER: "oauthFailed", "step": "network"}


async def test_token_endpoint_on_a_foreign_origin_is_refused(data_dir: Path) -> None:
    sent: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(str(request.url))
        return httpx2.Response(401)

    auth, url = mock_server(handler, data_dir, expired=True, allowed_origins=[])
    CredentialStore(data_dir).update(
        "s",
        url,
        lambda e: {
            **e,
            "metadata": {
                "authorizationServer": {
                    **e["metadata"]["authorizationServer"],
                    "token_endpoint": "https://evil.example/token",
                }
            },
        },
    )
    async with httpx2.AsyncClient(auth=auth, transport=httpx2.MockTransport(handler)) as client:
        response = await client.post(url, json=PING)
    assert response.json()["error"]["data"] == {REASON_MARKER: "originNotAllowed", "origin": "https://evil.example:443"}
    assert not [u for u in sent if "evil" in u]


async def test_each_login_request_is_bounded_by_the_startup_timeout(data_dir: Path) -> None:
    """Metadata that never comes: the login fails typed after ``http_timeout_s``, long before ``timeout_s``."""
    async with anyio.create_task_group() as tg:
        port = await tg.start(serve_raw, {b"GET /.well-known/": None})
        url = f"http://127.0.0.1:{port}/mcp"
        async with OAuthLogins(data_dir) as logins:
            with anyio.fail_after(20), pytest.raises(AppError) as info:
                await logins.start("s", url, on_done=Completion(), timeout_s=600, http_timeout_s=0.3)
        tg.cancel_scope.cancel()
    assert (info.value.reason, info.value.details) == ("oauthFailed", {"step": "network"})


@pytest.mark.parametrize(
    ("supported", "expected"),
    [
        (["client_secret_post"], "client_secret_post"),
        (["client_secret_basic", "client_secret_post"], "client_secret_basic"),
        (None, "client_secret_basic"),
    ],
)
def test_a_pre_registered_client_authenticates_the_way_the_server_lists(
    supported: list[str] | None, expected: str
) -> None:
    """Settled in the login's redirect handler, after discovery and before the token request is built."""
    from mcp.client.auth.oauth2 import OAuthContext
    from mcp.shared.auth import OAuthClientMetadata, OAuthMetadata

    from mcp_runtime.oauth.flow import pre_registered_client
    from mcp_runtime.oauth.login import MemoryTokenStorage, _settle_client_authentication
    from protocol.config import OAuthSettings

    context = OAuthContext(
        server_url="https://mcp.example/mcp",
        client_metadata=OAuthClientMetadata(redirect_uris=["http://127.0.0.1:1/cb"]),  # type: ignore[list-item]
        storage=MemoryTokenStorage(),
        redirect_handler=None,
        callback_handler=None,
    )
    context.client_info = pre_registered_client(OAuthSettings.model_validate({"clientId": "app"}), "s3cret", None)
    context.oauth_metadata = OAuthMetadata.model_validate(
        {
            "issuer": "https://mcp.example",
            "authorization_endpoint": "https://mcp.example/authorize",
            "token_endpoint": "https://mcp.example/token",
            "token_endpoint_auth_methods_supported": supported,
        }
    )
    _settle_client_authentication(context)
    assert context.client_info.token_endpoint_auth_method == expected
