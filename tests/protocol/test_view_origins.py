"""A view's declared origins (`_meta.ui.csp`) reach every host as origins only: an entry that could add a source or
a directive, name a local address or break a header is dropped by the model, with a note in the log."""

from __future__ import annotations

import logging

import pytest

from protocol.apps import csp_origin
from protocol.resource import UiResourceMeta


@pytest.mark.parametrize(
    ("entry", "origin"),
    [
        ("https://api.example.com", "https://api.example.com"),
        ("https://api.example.com/", "https://api.example.com"),
        ("wss://ws.example.com:8443", "wss://ws.example.com:8443"),
        ("https://*.example.com", "https://*.example.com"),
        ("https://Bücher.example", "https://xn--bcher-kva.example"),
        ("https://8.8.8.8", "https://8.8.8.8"),
    ],
)
def test_an_origin_is_kept_in_ascii(entry: str, origin: str) -> None:
    assert csp_origin(entry) == origin


@pytest.mark.parametrize(
    "entry",
    [
        "*",
        "https://*",
        "https://*.com",
        "https://a.*.example.com",
        "https://a.test; script-src *",
        "'unsafe-eval'",
        "https://example.com/path",
        "https://user@example.com",
        "javascript:alert(1)",
        "ftp://example.com",
        "http://127.0.0.1:8080",
        "http://127.1",
        "http://0x7f.1",
        "https://10.1.2.3",
        "https://192.168.0.1",
        "https://[::1]",
        "https://[fd00::1]",
        "http://localhost:3000",
        "https://view.localhost",
        "https://printer.local",
        "https://intranet",
        "https://ex\x00ample.com",
        "https://ex\u0085ample.com",
        "https://example.com:0",
        "https://example.com:70000",
        "https://" + "a" * 300 + ".com",
        42,
    ],
)
def test_anything_else_is_refused(entry: object) -> None:
    assert csp_origin(entry) is None


def test_the_model_drops_what_is_not_an_origin_and_notes_it(caplog: pytest.LogCaptureFixture) -> None:
    meta = {
        "csp": {
            "connectDomains": ["https://ok.example.com", "https://Ünï.example\r\nX: y", "*", "https://ok.example.com/"]
        }
    }
    with caplog.at_level(logging.WARNING, logger="protocol.resource"):
        ui = UiResourceMeta.model_validate(meta)
    assert ui.csp is not None
    assert ui.csp.connect_domains == ["https://ok.example.com"]
    assert ui.csp.resource_domains is None
    assert "2 entries that are not public origins" in caplog.text
