"""``mcpServer/oauth/login``: answer with the authorization URL at once; completion is an event to everyone."""

from __future__ import annotations

import anyio

from app_server.context import RequestContext
from app_server.handlers.owners import owner
from app_server.handlers.registry import method
from mcp_runtime import DEFAULT_TIMEOUT_S, client_metadata_url, login_client, revealed, step_up_scopes
from protocol.config import HttpServerConfig
from protocol.jsonrpc import AppError
from protocol.server import ErrorInfo, OAuthLoginParams, OAuthLoginResult
from protocol.status import OAuthLoginCompleted


@method("mcpServer/oauth/login", OAuthLoginParams)
async def login(ctx: RequestContext, params: OAuthLoginParams) -> OAuthLoginResult:
    daemon = ctx.daemon
    config = daemon.store.require(params.name).config
    if not isinstance(config, HttpServerConfig) or config.oauth is None:
        raise AppError("unsupported", f"server {params.name} is not configured for OAuth", name=params.name)
    if config.oauth.grant == "clientCredentials":
        raise AppError(
            "unsupported",
            f"server {params.name} is a machine client: it authenticates without a login",
            name=params.name,
        )
    kept = await revealed(params.name, config, "oauth.")  # a client secret the keychain keeps
    assert isinstance(kept, HttpServerConfig) and kept.oauth is not None
    logins = await daemon.logins()  # it has the SDK imported (off the loop) before a login reads its client
    client = login_client(kept.oauth, daemon.env)
    scopes = (
        params.scopes
        or await anyio.to_thread.run_sync(step_up_scopes, daemon.data_dir, params.name, config.url)
        or config.oauth.scopes
    )
    if params.thread_id is not None:
        owner(ctx, params.thread_id)  # a thread that must exist, and the asking connection follows it
    announced = anyio.Event()
    login_id: list[str] = []

    async def complete(success: bool, error: ErrorInfo | None) -> None:
        await announced.wait()  # the response carrying loginId goes out before the completion event
        if success:  # switch connections to the new tokens first, so a call after the event uses them
            await daemon.logged_in(params.name)
        daemon.bus.broadcast(
            "mcpServer/oauthLogin/completed",
            OAuthLoginCompleted(
                name=params.name, login_id=login_id[0], thread_id=params.thread_id, success=success, error=error
            ),
        )

    def on_done(success: bool, error: ErrorInfo | None) -> None:
        daemon.spawner.spawn(complete, success, error, name=f"oauth-completed:{params.name}")

    started = await logins.start(
        params.name,
        config.url,
        scopes=scopes,
        allowed_origins=config.oauth.allowed_origins,
        client=client,
        callback_port=config.oauth.callback_port,
        client_metadata_url=client_metadata_url(config.oauth, daemon.settings.policy),
        dpop=config.oauth.dpop,
        timeout_s=float(params.timeout_secs or DEFAULT_TIMEOUT_S),
        http_timeout_s=config.startup_timeout_ms / 1000,
        on_done=on_done,
    )
    login_id.append(started.login_id)
    announced.set()
    return OAuthLoginResult(authorization_url=started.authorization_url, login_id=started.login_id)
