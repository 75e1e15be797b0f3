"""The MCP Registry's read API ``v0.1`` (``GET /v0.1/servers``, ``GET /v0.1/servers/{name}/versions/{version}``),
bounded and cached.

Requests take at most 10 s, bodies at most 4 MiB, redirects are refused and TLS is verified. Every answer is kept
in the data dir (0600), so the gallery still shows the last answer (``stale``) while the registry is unreachable.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import anyio

from mcp_runtime.installs.origin import LATEST_FILE, latest_versions
from mcp_runtime.storage import safe_fs
from mcp_runtime.storage.clock import utc_now
from protocol.jsonrpc import AppError

TIMEOUT_S = 10.0
MAX_BODY = 4 << 20
CACHE_DIR = "registry-cache"
OFFICIAL = "io.modelcontextprotocol.registry/official"


class NotFound(Exception):
    """The registry answered 404."""


@dataclass(frozen=True)
class Answer:
    """A registry document and whether it came from the cache because the registry was unreachable."""

    body: Any
    stale: bool


class RegistryClient:
    """One registry, read through the cache in ``<dataDir>/registry-cache``."""

    def __init__(self, base_url: str, data_dir: Path) -> None:
        self.base_url = base_url.rstrip("/")
        self._data_dir = data_dir

    async def search(self, query: str | None, cursor: str | None, limit: int) -> Answer:
        params = {"version": "latest", "limit": str(limit)} | ({"search": query} if query else {})
        if cursor:
            params["cursor"] = cursor
        answer = await self._get(f"/v0.1/servers?{urlencode(params)}")
        if not answer.stale and isinstance(answer.body, dict):
            self._note_latest(
                item.get("server", {})
                for item in answer.body.get("servers", [])
                if isinstance(item, dict) and isinstance(item.get("server"), dict)
            )
        return answer

    async def get(self, name: str, version: str | None) -> Answer:
        answer = await self._get(f"/v0.1/servers/{quote(name, safe='')}/versions/{quote(version or 'latest', safe='')}")
        if version is None and not answer.stale and isinstance(answer.body, dict):
            server = answer.body.get("server")
            if isinstance(server, dict):
                self._note_latest([server])
        return answer

    def _note_latest(self, servers: Any) -> None:
        known = latest_versions(self._data_dir)
        changed = False
        for server in servers:
            name, version = server.get("name"), server.get("version")
            if isinstance(name, str) and isinstance(version, str) and known.get(name) != version:
                known[name] = version
                changed = True
        if changed:
            safe_fs.write_file(self._data_dir, LATEST_FILE, json.dumps(known).encode())

    async def _get(self, path: str) -> Answer:
        url = self.base_url + path
        cache = f"{CACHE_DIR}/{hashlib.sha256(url.encode()).hexdigest()[:32]}.json"
        try:
            with anyio.fail_after(TIMEOUT_S):
                body = await _fetch(url)
        except NotFound:
            raise
        except (OSError, ValueError, _Unreachable) as exc:
            kept = _read_json(self._data_dir, cache)
            if not isinstance(kept, dict) or "body" not in kept:  # nothing cached, or a cache file spoilt
                raise AppError(
                    "registryUnavailable", f"the MCP Registry cannot be reached: {exc}", url=self.base_url,
                    detail=str(exc)[:200],
                ) from None  # fmt: skip
            return Answer(kept["body"], stale=True)
        safe_fs.write_file(self._data_dir, cache, json.dumps({"url": url, "at": utc_now(), "body": body}).encode())
        return Answer(body, stale=False)


class _Unreachable(Exception):
    """A transport failure, a refused redirect, a server error or a body past the cap."""


def _read_json(data_dir: Path, rel: str) -> Any:
    try:
        data = safe_fs.read_file(data_dir, rel, MAX_BODY * 2)
        return None if data is None else json.loads(data)
    except (OSError, ValueError, AppError):
        return None


async def _fetch(url: str) -> Any:
    import httpx2  # the SDK's HTTP client; loaded only when the registry is first asked

    try:
        async with (
            httpx2.AsyncClient(follow_redirects=False, timeout=httpx2.Timeout(TIMEOUT_S), verify=True) as client,
            client.stream("GET", url, headers={"Accept": "application/json"}) as response,
        ):
            if response.status_code == 404:
                raise NotFound(url)
            if response.status_code != 200:
                raise _Unreachable(f"HTTP {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_BODY:
                    raise _Unreachable("the answer is larger than 4 MiB")
    except httpx2.HTTPError as exc:
        raise _Unreachable(type(exc).__name__) from None
    return json.loads(body)


def official_meta(item: dict[str, Any]) -> dict[str, Any]:
    """The registry's own metadata of a listed entry (status, publishedAt, isLatest)."""
    meta = item.get("_meta")
    official = meta.get(OFFICIAL) if isinstance(meta, dict) else None
    return official if isinstance(official, dict) else {}
