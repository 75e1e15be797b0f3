"""The shipped protocol reference is the models' own: generated from them, complete, its links landing."""

from __future__ import annotations

import re

from protocol.catalog import METHODS, NOTIFICATIONS, SERVER_REQUESTS
from protocol.docs_export import render
from protocol.jsonrpc import REASON_CODES
from tests.daemon_client import ROOT

REFERENCE = ROOT / "docs" / "protocol.md"


def test_the_checked_in_reference_is_generated_from_the_models() -> None:
    assert render() == REFERENCE.read_text(), "regenerate with `make schemas`"


def test_the_reference_names_every_method_notification_and_reason_and_every_link_lands() -> None:
    text = REFERENCE.read_text()
    for name in [*METHODS, *NOTIFICATIONS, *SERVER_REQUESTS]:
        assert f"### `{name}`" in text, name
    for reason in REASON_CODES:
        assert f"| `{reason}` |" in text, reason
    anchors = {heading.lower() for heading in re.findall(r"^### `([A-Za-z0-9]+)`$", text, re.M)}
    links = set(re.findall(r"\]\(#([a-z0-9]+)\)", text))
    methods = {re.sub(r"[^a-z0-9_-]", "", m.lower()) for m in METHODS}
    assert links - anchors - methods == set()

