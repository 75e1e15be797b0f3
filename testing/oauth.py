"""OAuth helpers shared by the black-box tests: the test plays the browser, reads what the daemon stored, waits for
a token's expiry (polling the clock until the stored expiry has passed: a condition, not a race), reads and drives
the OAuth fixture's controls, plays the enterprise IdP's sign-in and the workload platform (minting the ID tokens
and workload JWTs the fixture accepts, rotating their files in place), and collects what the daemon showed."""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from testing.daemon_client import Daemon, DaemonError, JsonLinesClient

TIMEOUT = 60.0


def browse(authorization_url: str) -> httpx2.Response:
    """What a browser does: the fixture's /authorize redirects to our loopback callback, which we follow."""
    location = httpx2.get(authorization_url, follow_redirects=False).headers["location"]
    return httpx2.get(location, follow_redirects=False)


def login(d: Daemon, name: str, **params: Any) -> dict[str, Any]:
    started = d.request("mcpServer/oauth/login", {"name": name, **params}, timeout=60)
    browse(started["authorizationUrl"])
    return d.wait_notification("mcpServer/oauthLogin/completed", lambda p: p["loginId"] == started["loginId"],
                               timeout=60)


def stored_tokens(data_dir: Path) -> list[str]:
    document = json.loads((data_dir / "credentials.json").read_text())
    return [value for entry in document["entries"].values() for value in entry["tokens"].values()
            if isinstance(value, str) and len(value) > 12]


def wait_for_expiry(data_dir: Path) -> None:
    """Until the stored access token has expired (the fixture's copy expired no later)."""
    entries = json.loads((data_dir / "credentials.json").read_text())["entries"].values()
    expires_at = max(entry.get("expiresAt") or 0 for entry in entries)
    while time.time() <= expires_at + 0.05:
        time.sleep(0.05)


def tool_call(thread_id: str, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"threadId": thread_id, "server": "sec", "tool": tool, "arguments": arguments or {}}


def fixture_stats(d: JsonLinesClient, thread_id: str) -> dict[str, int]:
    result = d.request("mcpServer/tool/call", tool_call(thread_id, "stats"), timeout=TIMEOUT)
    return result["structuredContent"]  # type: ignore[no-any-return]


def free_port() -> int:
    """A port nothing listens on now (the daemon binds it again when a login starts)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def pem_pair(kind: str) -> tuple[str, str]:
    """A fresh (private PKCS8 PEM, public SPKI PEM) pair for ES256 or RS256."""
    key = ec.generate_private_key(ec.SECP256R1()) if kind == "ES256" else rsa.generate_private_key(65537, 2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()
    return private, public


# --- the OAuth fixture's controls ------------------------------------------------------------------------------


def fixture_origin(url: str) -> str:
    """``http://127.0.0.1:<port>`` of a fixture's MCP URL (also its issuer, unless moved)."""
    return url.rsplit("/", 1)[0]


def fixture_get(url: str, control: str) -> dict[str, Any]:
    """``GET /fixture/<control>`` (``stats``, ``seen``): read without an MCP connection."""
    return httpx2.get(f"{fixture_origin(url)}/fixture/{control}").json()  # type: ignore[no-any-return]


def fixture_post(url: str, control: str) -> dict[str, Any]:
    return httpx2.post(f"{fixture_origin(url)}/fixture/{control}").json()  # type: ignore[no-any-return]


# --- what the host keeps for the daemon --------------------------------------------------------------------------


def id_token(key: str, audience: str, subject: str, ttl: int = 3600) -> str:
    """An ID token as the fixture's IdP issues it at sign-in (HS256 with the IdP's key)."""
    now = int(time.time())
    claims = {"iss": "https://idp.test", "sub": subject, "aud": audience, "iat": now, "exp": now + ttl}
    return jwt.encode(claims, key, algorithm="HS256")


def workload_jwt(private_pem: str, audience: str, subject: str, ttl: int = 3600) -> str:
    """A workload identity JWT as a platform issues it (ES256), for the authorization server ``audience``."""
    now = int(time.time())
    claims = {"iss": "https://platform.test", "sub": subject, "aud": audience, "iat": now, "exp": now + ttl}
    return jwt.encode(claims, private_pem, algorithm="ES256")


def write_rotated(path: Path, text: str) -> None:
    """Replace a kept credential the way single sign-on agents and workload platforms do: a new file renamed over
    the old one, so a reader sees the old token or the new one, never half of either."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as file:
        file.write(text)
    os.replace(temp, path)


# --- what the daemon showed ---------------------------------------------------------------------------------------


class Shown:
    """Every answer and error the test got from a daemon (a secret in any of them is a leak), next to its log and
    trace files."""

    def __init__(self, daemon: Daemon, trace: Path | None = None) -> None:
        self.daemon, self.trace = daemon, trace
        self.answers: list[str] = []

    def request(self, method: str, params: Any = None, timeout: float = TIMEOUT) -> Any:
        try:
            result = self.daemon.request(method, params, timeout=timeout)
        except DaemonError as exc:
            self.answers.append(json.dumps({"message": exc.message, "data": exc.data}))
            raise
        self.answers.append(json.dumps(result))
        return result

    def text(self) -> str:
        """Answers, notifications still queued, the log (stderr) and the trace, as one text to search."""
        notes = [json.dumps(self.daemon.notifications(m)) for m in (
            "mcpServer/startupStatus/updated", "mcpServer/oauthLogin/completed")]
        trace = self.trace.read_text() if self.trace is not None and self.trace.exists() else ""
        return "\n".join([*self.answers, *notes, self.daemon.stderr(), trace])

    def leaked(self, secrets: list[str]) -> list[str]:
        """The secrets found anywhere the daemon showed, whole or by a JWT's payload or signature (its header is
        the same for every JWT of a kind); [] when none."""
        text = self.text()
        found = []
        for secret in filter(None, secrets):
            parts = [secret, *(part for part in secret.split(".")[1:] if len(part) >= 32)]
            if any(part in text for part in parts):
                found.append(secret[:12] + "...")
        return found
