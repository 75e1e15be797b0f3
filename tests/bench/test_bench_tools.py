"""The programs in ``bench/`` are not run by the suite's timing-free tests, so they could rot unseen: one did
(``bench.soak`` imported a class a refactor had removed). Each module must import, and the soak must run
end to end against the real daemon and fixture server."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import bench
from bench import soak

MODULES = sorted(info.name for info in pkgutil.iter_modules(bench.__path__))


@pytest.mark.parametrize("name", MODULES)
def test_every_bench_module_imports(name: str) -> None:
    module = importlib.import_module(f"bench.{name}")
    assert module.__doc__, f"bench.{name} says what it measures"


def test_a_short_soak_runs_every_phase_without_an_error() -> None:
    rows = soak.run(rounds=2, calls=60, lists=60, hostile=20, restarts=2, deaf_calls=8)
    assert [row["phase"] for row in rows] == ["start", "round 1", "round 2", "before", "deaf", "read all"]
    assert all(row["errors"] == 0 for row in rows)
    assert all(row["rss_kib"] > 0 and row["fds"] > 0 for row in rows)
