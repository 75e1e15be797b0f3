"""Interactive OAuth login (SPEC §6 ``mcpServer/oauth/login``), driven by the SDK's ``OAuthClientProvider``.

The SDK's flow needs a 401 to start from, so one unauthenticated ``ping`` is POSTed through
``httpx2.AsyncClient(auth=provider)`` and the provider does the rest (discovery, registration, PKCE, state,
``iss``, exchange), with DPoP around it where it applies (``dpop.ProvingAuth``). Tokens are staged in memory
and committed only when the login succeeds, so a failed or cancelled re-login never destroys working credentials.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
import structlog

from mcp_runtime._sdk_compat import load_sdk
from mcp_runtime.oauth.callback import CallbackHub
from mcp_runtime.oauth.credentials import CredentialStore, expires_at
from mcp_runtime.oauth.dpop import DPoP, Mode, ProvingAuth
from mcp_runtime.oauth.policy import (
    OriginPolicy,
    join_scopes,
    redirect_rejected,
    sdk_failure,
    silence_sdk_auth_logging,
)
from protocol.jsonrpc import AppError
from protocol.server import ErrorInfo

if TYPE_CHECKING:
    import httpx2

log = structlog.get_logger("mcp_runtime.oauth")

DEFAULT_TIMEOUT_S = 180.0
MIN_TIMEOUT_S, MAX_TIMEOUT_S = 1.0, 600.0
HTTP_TIMEOUT_S = 30.0
CLIENT_NAME = "mcp-app-server"
_PING = {"jsonrpc": "2.0", "id": "oauth-login", "method": "ping"}
_PROTOCOL_VERSION = "2025-11-25"

LoginDone = Callable[[bool, ErrorInfo | None], None]
"""Called exactly once per started login: ``(True, None)`` or ``(False, ErrorInfo)``. Must not block."""


@dataclass(frozen=True)
class LoginStarted:
    """What ``mcpServer/oauth/login`` answers with. The URL is a secret: only the response may carry it."""

    authorization_url: str
    login_id: str


class MemoryTokenStorage:
    """The SDK's ``TokenStorage`` protocol held in memory while a login runs (the staging area)."""

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


def _client_metadata(redirect_uri: str, scopes: list[str] | None) -> Any:
    """Client metadata for registration; explicit scopes are pinned.

    The SDK replaces ``client_metadata.scope`` with what the server advertises (WWW-Authenticate, then
    resource metadata, then AS metadata). Scopes the user asked for explicitly win instead, so the assignment
    is ignored when scopes were given.
    """
    from mcp.shared.auth import OAuthClientMetadata

    pinned = join_scopes(scopes)

    class _Metadata(OAuthClientMetadata):
        def __setattr__(self, name: str, value: Any) -> None:
            if name == "scope" and pinned is not None:
                value = pinned
            super().__setattr__(name, value)

    return _Metadata(
        client_name=CLIENT_NAME,
        redirect_uris=[redirect_uri],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope=pinned,
    )


def _metadata_record(provider: Any) -> dict[str, Any]:
    """Discovered metadata (no secrets) kept so runtime refreshes reach the right token endpoint after a restart."""
    context = provider.context
    prm, asm = context.protected_resource_metadata, context.oauth_metadata
    return {
        "protectedResource": prm.model_dump(mode="json", exclude_none=True) if prm is not None else None,
        "authorizationServer": asm.model_dump(mode="json", exclude_none=True) if asm is not None else None,
        "authServerUrl": context.auth_server_url,
    }


def _settle_client_authentication(context: Any) -> None:
    """A pre-registered client's token-endpoint authentication, chosen once the server's metadata is known.

    The client record is set before discovery, so its method is a guess (``client_secret_basic`` when it has a
    secret); ``client_secret_post`` is used instead when the authorization server lists only that.
    """
    info, metadata = context.client_info, context.oauth_metadata
    supported = metadata.token_endpoint_auth_methods_supported if metadata is not None else None
    method = info.token_endpoint_auth_method if info is not None else None
    if info is not None and info.client_secret and supported and method not in supported:
        if "client_secret_post" in supported:
            info.token_endpoint_auth_method = "client_secret_post"
        elif "client_secret_basic" in supported:
            info.token_endpoint_auth_method = "client_secret_basic"


@dataclass(eq=False)
class _Login:
    login_id: str
    name: str
    url: str
    scopes: list[str] | None
    policy: OriginPolicy
    timeout_s: float
    http_timeout_s: float
    client: Any
    callback_port: int | None
    client_metadata_url: str | None
    dpop: Mode | None
    on_done: LoginDone
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    finished: anyio.Event = field(default_factory=anyio.Event)
    cancel_reason: str | None = None

    def cancel(self, why: str) -> None:
        self.cancel_reason = self.cancel_reason or why
        self.scope.cancel()


class OAuthLogins:
    """The daemon's running logins, at most one per server name; owns their background tasks.

    ``async with OAuthLogins(data_dir) as logins: started = await logins.start(...)``. Leaving the block
    cancels the logins still running (each completes with reason ``cancelled``).
    """

    def __init__(self, data_dir: Path) -> None:
        self.store = CredentialStore(data_dir)
        self._active: dict[str, _Login] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._hub: CallbackHub | None = None

    async def __aenter__(self) -> OAuthLogins:
        await load_sdk()  # off the loop, one import at a time: a start may be importing it in a worker right now
        silence_sdk_auth_logging()
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._hub = CallbackHub(self._tg)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._tg is not None
        for login in list(self._active.values()):
            login.cancel("the daemon is shutting down")
        return await self._tg.__aexit__(exc_type, exc, tb)

    async def start(
        self,
        name: str,
        url: str,
        *,
        scopes: list[str] | None = None,
        allowed_origins: list[str] | None = None,
        client: Any = None,
        callback_port: int | None = None,
        client_metadata_url: str | None = None,
        dpop: Mode | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        http_timeout_s: float = HTTP_TIMEOUT_S,
        on_done: LoginDone,
    ) -> LoginStarted:
        """Start a login and return as soon as the authorization URL is known; the rest runs in the background.

        ``client`` is a pre-registered client or None (a client ID metadata document at ``client_metadata_url``
        where the authorization server supports one, else dynamic registration); the redirect comes back to
        ``callback_port`` (None: a free port); ``dpop`` is the server's ``oauth.dpop``. Each request is bounded by
        ``http_timeout_s`` and the whole login by ``timeout_s``. A failure before the URL is known raises
        (``on_done`` is never called); a running login of the same server is cancelled, and has completed, before
        this one starts.
        """
        if self._tg is None:
            raise AppError("internal", "the login manager is not running")
        if not MIN_TIMEOUT_S <= timeout_s <= MAX_TIMEOUT_S:
            raise AppError("invalidParams", f"timeoutSecs must be within {MIN_TIMEOUT_S:g}-{MAX_TIMEOUT_S:g}")
        policy = OriginPolicy(url, allowed_origins)
        policy.check(url, "server URL")
        previous = self._active.get(name)
        if previous is not None:
            previous.cancel("a newer login for this server replaced this one")
            await previous.finished.wait()
        login = _Login(
            secrets.token_urlsafe(16),
            name,
            url,
            scopes,
            policy,
            timeout_s,
            http_timeout_s,
            client,
            callback_port,
            client_metadata_url,
            dpop,
            on_done,
        )
        self._active[name] = login
        try:
            authorization_url: str = await self._tg.start(self._run, login)
        except BaseException:
            if self._active.get(name) is login:
                del self._active[name]
            raise
        return LoginStarted(authorization_url=authorization_url, login_id=login.login_id)

    async def cancel(self, name: str) -> None:
        """Cancel the running login of ``name`` (server deleted or changed); it completes with ``cancelled``."""
        login = self._active.get(name)
        if login is not None:
            login.cancel("the server was changed or removed")
            await login.finished.wait()

    async def _run(self, login: _Login, *, task_status: anyio.abc.TaskStatus[str]) -> None:
        announced: list[str] = []

        def announce(authorization_url: str) -> None:
            announced.append(authorization_url)
            task_status.started(authorization_url)

        error: AppError | None = None
        log.info("oauth_login_started", server=login.name, login_id=login.login_id)
        try:
            with login.scope:
                with anyio.move_on_after(login.timeout_s) as timer:
                    await self._flow(login, announce)
                if timer.cancelled_caught:
                    error = AppError(
                        "timeout",
                        f"the login did not complete within {login.timeout_s:g} s",
                        server=login.name,
                        timeoutMs=round(login.timeout_s * 1000),
                    )
            if login.scope.cancelled_caught:
                error = AppError("cancelled", login.cancel_reason or "the login was cancelled")
        except Exception as exc:
            error = sdk_failure(exc)
        finally:
            login.finished.set()
            if self._active.get(login.name) is login:
                del self._active[login.name]
        if error is not None:
            log.info("oauth_login_failed", server=login.name, login_id=login.login_id, reason=error.reason)
        else:
            log.info("oauth_login_completed", server=login.name, login_id=login.login_id)
        if not announced:
            raise error or AppError("oauthFailed", "the login ended before an authorization URL was known")
        try:
            login.on_done(
                error is None, None if error is None else ErrorInfo(reason=error.reason, message=error.message)
            )
        except Exception:  # a broken sink must not take the other logins down with this task group
            log.exception("oauth_login_callback_failed", server=login.name, login_id=login.login_id)

    async def _flow(self, login: _Login, announce: Callable[[str], None]) -> None:
        import httpx2
        from mcp.client.auth import OAuthClientProvider
        from mcp.client.auth.utils import extract_field_from_www_auth
        from mcp.shared.auth import AuthorizationCodeResult

        assert self._hub is not None
        dpop = DPoP(login.dpop)
        async with self._hub.attach(login.callback_port) as callback:
            storage = MemoryTokenStorage()
            storage.client_info = login.client

            async def redirect_handler(authorization_url: str) -> None:
                login.policy.check(authorization_url, "authorization endpoint")
                states = parse_qs(urlsplit(authorization_url).query).get("state") or []
                if len(states) != 1:
                    raise AppError("oauthFailed", "the authorization URL carries no single state", step="flow")
                callback.expect_state(states[0])
                # Discovery is done and the token request not yet built: the moment to settle how it authenticates,
                # and to refuse a required DPoP the authorization server does not offer before the user signs in.
                _settle_client_authentication(provider.context)
                dpop.check_supported()
                announce(authorization_url)

            async def callback_handler() -> AuthorizationCodeResult:
                result = await callback.wait()
                return AuthorizationCodeResult(code=result.code, state=result.state, iss=result.iss)

            provider = OAuthClientProvider(
                login.url,
                _client_metadata(callback.redirect_uri, login.scopes),
                storage,
                redirect_handler=redirect_handler,
                callback_handler=callback_handler,
                client_metadata_url=login.client_metadata_url,
            )

            bound = httpx2.Timeout(login.http_timeout_s).as_dict()

            async def check_request(request: httpx2.Request) -> None:
                login.policy.check(str(request.url), "OAuth endpoint")
                # The SDK's own requests (discovery, registration, token) get no client timeout from httpx2.
                request.extensions.setdefault("timeout", bound)

            async def check_response(response: httpx2.Response) -> None:
                if 300 <= response.status_code < 400:
                    raise redirect_rejected(response.status_code)

            async with (
                httpx2.AsyncClient(
                    auth=ProvingAuth(provider, dpop),
                    follow_redirects=False,
                    timeout=httpx2.Timeout(login.http_timeout_s),
                    event_hooks={"request": [check_request], "response": [check_response]},
                ) as client,
                client.stream(
                    "POST",
                    login.url,
                    json=_PING,
                    headers={
                        "Accept": "application/json, text/event-stream",
                        "MCP-Protocol-Version": _PROTOCOL_VERSION,
                    },
                ) as response,
            ):
                status = response.status_code
                scope_error = extract_field_from_www_auth(response, "error")

        if storage.tokens is None:
            raise AppError("oauthFailed", "the server did not ask for authorization", step="flow", status=status)
        if status == 401:
            raise AppError("oauthFailed", "the server refused the newly issued access token", step="verify")
        if status == 403 and scope_error == "insufficient_scope":
            raise AppError("insufficientScope", "the granted scopes are not enough for this server")
        tokens = storage.tokens.model_dump(mode="json", exclude_none=True)
        client_info = storage.client_info.model_dump(mode="json", exclude_none=True) if storage.client_info else None
        if client_info is not None and login.client is not None:
            client_info.pop("client_secret", None)  # a pre-registered secret stays in the environment
        asked = provider.context.client_metadata.scope
        entry = {
            "tokens": tokens,
            "expiresAt": expires_at(tokens),
            "clientInfo": client_info,
            "metadata": _metadata_record(provider),
            "requestedScopes": asked.split() if asked else [],
            **dpop.record(),
        }
        # Shielded: once the code is exchanged, a late cancel must not lose the tokens half-way.
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.store.put, login.name, login.url, entry)
