from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.daemon_client import Daemon, running_daemon


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def daemon(data_dir: Path) -> Iterator[Daemon]:
    """An initialized daemon on a fresh data dir."""
    with running_daemon(data_dir) as d:
        d.initialize()
        yield d
