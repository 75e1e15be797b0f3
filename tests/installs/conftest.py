from __future__ import annotations

from collections.abc import Iterator

import pytest

from scripts.smoke.fixtures.launch import http_fixture, http_script


@pytest.fixture
def remote_url() -> Iterator[str]:
    """A Streamable HTTP MCP server on loopback (the SDK fixture)."""
    with http_fixture() as url:
        yield url


@pytest.fixture
def registry_url(remote_url: str) -> Iterator[str]:
    """The loopback MCP Registry fixture, its remote entry pointing at ``remote_url``."""
    with http_script("registry_server.py", "--remote-url", remote_url) as url:
        yield url
