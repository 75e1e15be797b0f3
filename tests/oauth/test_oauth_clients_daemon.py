"""OAuth clients of SPEC §5 through the real daemon against the strict OAuth fixture: the fixed callback port, a
client ID metadata document (per server and the daemon's default), ``private_key_jwt`` machine clients, and a
login that times out before its URL is known."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from scripts.smoke.fixtures.launch import oauth_fixture
from testing.daemon_client import Daemon, DaemonError, running_daemon
from testing.oauth import TIMEOUT, browse, free_port, pem_pair, tool_call, wait_for_expiry

pytestmark = pytest.mark.daemon

DOCUMENT = "https://app.example/oauth/client.json"


def start_login(d: Daemon, name: str, **params: Any) -> dict[str, Any]:
    return d.request("mcpServer/oauth/login", {"name": name, **params}, timeout=TIMEOUT)  # type: ignore[no-any-return]


def finish_login(d: Daemon, started: dict[str, Any]) -> dict[str, Any]:
    assert browse(started["authorizationUrl"]).status_code == 200
    return d.wait_notification(  # type: ignore[no-any-return]
        "mcpServer/oauthLogin/completed", lambda p: p["loginId"] == started["loginId"], timeout=TIMEOUT
    )


def query_of(authorization_url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(authorization_url).query)


def whoami(d: Daemon, server: str) -> dict[str, Any]:
    thread_id = d.request("thread/start", {"servers": [server]})["thread"]["id"]
    result = d.request("mcpServer/tool/call", {**tool_call(thread_id, "whoami"), "server": server}, timeout=TIMEOUT)
    return result["structuredContent"]  # type: ignore[no-any-return]


def test_a_callback_port_in_use_is_refused_typed(daemon: Daemon) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder, oauth_fixture() as url:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        config = {"type": "http", "url": url, "oauth": {"callbackPort": port}}
        daemon.request("mcpServer/create", {"name": "sec", "config": config})
        with pytest.raises(DaemonError) as err:
            start_login(daemon, "sec")
        assert (err.value.code, err.value.reason, err.value.data["port"]) == (-32012, "callbackPortInUse", port)
    assert daemon.notifications("mcpServer/oauthLogin/completed") == []
    for port in (80, 65536, True, "8080"):
        with pytest.raises(DaemonError) as err:
            daemon.request("mcpServer/create", {"name": "bad", "config": {"type": "http", "url": url,
                                                                          "oauth": {"callbackPort": port}}})
        assert err.value.reason == "invalidParams"


def test_two_servers_log_in_at_once_on_one_callback_port(data_dir: Path) -> None:
    """One listener serves both logins; each callback reaches the login its state belongs to."""
    port = free_port()
    with oauth_fixture() as first_url, oauth_fixture() as second_url, running_daemon(data_dir) as daemon:
        daemon.initialize()
        for name, url in (("one", first_url), ("two", second_url)):
            config = {"type": "http", "url": url, "oauth": {"callbackPort": port}}
            daemon.request("mcpServer/create", {"name": name, "config": config})
        one, two = start_login(daemon, "one"), start_login(daemon, "two")
        redirect = [f"http://127.0.0.1:{port}/oauth/callback"]
        assert query_of(one["authorizationUrl"])["redirect_uri"] == query_of(two["authorizationUrl"])["redirect_uri"]
        assert query_of(one["authorizationUrl"])["redirect_uri"] == redirect
        assert finish_login(daemon, two)["success"] is True
        assert finish_login(daemon, one)["success"] is True
        assert whoami(daemon, "one")["clientId"] != whoami(daemon, "two")["clientId"]


@pytest.fixture
def cimd_port() -> Iterator[int]:
    yield free_port()


def test_a_client_id_metadata_document_is_the_client_id_where_the_server_supports_it(
    data_dir: Path, cimd_port: int
) -> None:
    redirect = f"http://127.0.0.1:{cimd_port}/oauth/callback"
    oauth = {"clientMetadataUrl": DOCUMENT, "callbackPort": cimd_port}
    with (
        oauth_fixture("--no-registration", "--cimd", f"{DOCUMENT}={redirect}") as url,
        running_daemon(data_dir) as daemon,
    ):
        daemon.initialize()
        daemon.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": url, "oauth": oauth}})
        started = start_login(daemon, "sec")
        assert query_of(started["authorizationUrl"])["client_id"] == [DOCUMENT]
        assert finish_login(daemon, started)["success"] is True
        assert whoami(daemon, "sec")["clientId"] == DOCUMENT


def test_without_document_support_the_client_registers_and_a_document_must_be_https(daemon: Daemon) -> None:
    oauth = {"clientMetadataUrl": DOCUMENT}
    with oauth_fixture() as url:  # no CIMD support advertised: dynamic registration, as before
        daemon.request("mcpServer/create", {"name": "dcr", "config": {"type": "http", "url": url, "oauth": oauth}})
        started = start_login(daemon, "dcr")
        assert query_of(started["authorizationUrl"])["client_id"] != [DOCUMENT]
        assert finish_login(daemon, started)["success"] is True
        daemon.request("mcpServer/delete", {"name": "dcr"})
    for bad in ("http://app.example/client.json", "https://app.example/", "https://app.example"):
        with pytest.raises(DaemonError) as err:
            daemon.request("mcpServer/create", {"name": "bad", "config": {"type": "http", "url": url,
                                                                          "oauth": {"clientMetadataUrl": bad}}})
        assert (err.value.reason, err.value.data["field"]) == ("insecureUrl", "oauth.clientMetadataUrl")
    with pytest.raises(DaemonError) as err:
        config = {"type": "http", "url": url, "oauth": {"clientMetadataUrl": DOCUMENT, "clientId": "app"}}
        daemon.request("mcpServer/create", {"name": "bad", "config": config})
    assert err.value.reason == "invalidParams"


def test_the_daemon_option_sets_the_document_for_every_server(data_dir: Path, cimd_port: int) -> None:
    redirect = f"http://127.0.0.1:{cimd_port}/oauth/callback"
    with (
        oauth_fixture("--no-registration", "--cimd", f"{DOCUMENT}={redirect}") as url,
        running_daemon(data_dir, args=("--oauth-client-metadata-url", DOCUMENT)) as d,
    ):
        d.initialize()
        config = {"type": "http", "url": url, "oauth": {"callbackPort": cimd_port}}
        d.request("mcpServer/create", {"name": "sec", "config": config})
        assert finish_login(d, start_login(d, "sec"))["success"] is True
        assert whoami(d, "sec")["clientId"] == DOCUMENT


def test_a_document_that_is_not_https_is_a_usage_error(data_dir: Path) -> None:
    with running_daemon(data_dir, args=("--oauth-client-metadata-url", "http://app.example/c.json")) as d:
        assert d.process.wait(10) == 2
    assert "--oauth-client-metadata-url" in d.stderr()


@pytest.mark.parametrize("algorithm", ["ES256", "RS256"])
def test_a_private_key_jwt_machine_client_needs_no_login_and_keeps_no_key(
    data_dir: Path, tmp_path: Path, algorithm: str
) -> None:
    private, public = pem_pair(algorithm)
    other, _ = pem_pair("RS256" if algorithm == "ES256" else "ES256")
    public_file = tmp_path / "bot.pub.pem"
    public_file.write_text(public)
    env = {**os.environ, "BOT_KEY": private, "WRONG_KEY": other}
    env.pop("UNSET_BOT_KEY", None)
    with (
        oauth_fixture("--machine-key-client", f"bot:{public_file}", "--token-ttl", "1") as url,
        running_daemon(data_dir, env=env) as d,
    ):
        d.initialize()
        issuer = url.rsplit("/", 1)[0] + "/"
        oauth: dict[str, Any] = {"grant": "clientCredentials", "clientId": "bot", "privateKeyEnvVar": "BOT_KEY",
                                 "expectedIssuer": issuer, "scopes": ["mcp"]}
        if algorithm == "ES256":
            oauth["signingAlgorithm"] = "ES256"
        d.request("mcpServer/create", {"name": "sec", "config": {"type": "http", "url": url, "oauth": oauth}})
        d.request("mcpServer/start", {"name": "sec"}, timeout=TIMEOUT)
        thread_id = d.request("thread/start", {"servers": ["sec"]})["thread"]["id"]
        for _ in range(2):  # a token again on expiry, each with a fresh assertion
            wait_for_expiry(data_dir)
            who = d.request("mcpServer/tool/call", tool_call(thread_id, "whoami"), timeout=TIMEOUT)
            assert who["structuredContent"]["clientId"] == "bot"
        status = next(s for s in d.request("mcpServerStatus/list")["data"] if s["name"] == "sec")
        assert (status["runtimeStatus"], status["authStatus"]) == ("connected", "oAuth")
        body = private.splitlines()[1]
        assert body not in (data_dir / "credentials.json").read_text() and body not in d.stderr()
        assert body not in str(d.request("mcpServer/list"))

        for name, change, reason, code in (
            ("inline", {"privateKey": private}, "inlineSecret", -32012),
            ("unset", {"privateKeyEnvVar": "UNSET_BOT_KEY"}, "missingEnvVar", -32012),
            ("wrongkey", {"privateKeyEnvVar": "WRONG_KEY"}, "oauthFailed", -32016),
        ):
            config = {"type": "http", "url": url, "oauth": {**oauth, **change}}
            if reason == "inlineSecret":
                with pytest.raises(DaemonError) as err:
                    d.request("mcpServer/create", {"name": name, "config": config})
            else:
                d.request("mcpServer/create", {"name": name, "config": config})
                with pytest.raises(DaemonError) as err:
                    d.request("mcpServer/start", {"name": name}, timeout=TIMEOUT)
            assert (err.value.code, err.value.reason) == (code, reason)
            assert body not in err.value.message
        with pytest.raises(DaemonError) as err:
            d.request("mcpServer/create", {"name": "both", "config": {"type": "http", "url": url, "oauth": {
                **oauth, "clientSecretEnvVar": "BOT_KEY"}}})
        assert err.value.reason == "invalidParams"


def test_a_login_that_times_out_before_its_url_is_known_names_server_and_deadline(daemon: Daemon) -> None:
    """The server accepts the connection and never answers: no authorization URL is ever known."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/mcp"
        daemon.request("mcpServer/create", {"name": "mute", "config": {"type": "http", "url": url, "oauth": {}}})
        with pytest.raises(DaemonError) as err:
            start_login(daemon, "mute", timeoutSecs=1)
    assert (err.value.code, err.value.reason) == (-32015, "timeout")
    assert (err.value.data["server"], err.value.data["timeoutMs"]) == ("mute", 1000)
