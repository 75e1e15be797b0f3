from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.secret_service import SecretServiceSession, secret_service


@pytest.fixture
def keychain(tmp_path: Path) -> Iterator[SecretServiceSession]:
    """A real Secret Service (GNOME Keyring on a private session bus), unlocked, for one test."""
    with secret_service(tmp_path / "keychain") as session:
        yield session
