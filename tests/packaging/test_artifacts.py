"""The shipped Python artifacts (SPEC §10): the sdist builds the wheel the tree builds, the wheel's metadata is
complete and it carries what the daemon loads at run time; the test client can drive an installed artifact.

The builds are slow-marked (``make smoke-wheel`` runs them, with the artifact tools of packaging/requirements.txt);
the smoke itself runs against the installed wheel and the bundle in ``make smoke-wheel`` / ``make smoke-dist``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from testing.daemon_client import DAEMON_COMMAND_ENV, ROOT, running_daemon

pytestmark = pytest.mark.daemon


def build(out: Path, *options: str) -> None:
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), *options, str(ROOT)], check=True,
                   capture_output=True, timeout=300)


def members(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python -m build``'s default: the sdist, then the wheel built from that sdist."""
    out = tmp_path_factory.mktemp("artifacts")
    build(out)
    return out


@pytest.mark.slow
def test_the_sdist_builds_the_wheel_the_tree_builds(built: Path, tmp_path: Path) -> None:
    build(tmp_path, "--wheel")
    [from_sdist] = built.glob("*.whl")
    [from_tree] = tmp_path.glob("*.whl")
    assert members(from_sdist) == members(from_tree)


@pytest.mark.slow
def test_the_wheel_metadata_is_complete_and_it_carries_the_stub(built: Path) -> None:
    [wheel] = built.glob("*.whl")
    files = members(wheel)
    info = next(name.split("/")[0] for name in files if name.endswith(".dist-info/METADATA"))
    metadata = Parser().parsestr(files[f"{info}/METADATA"].decode())
    assert metadata["License-Expression"] == "MIT"
    assert b"MIT License" in files[f"{info}/licenses/LICENSE"]
    assert metadata["Requires-Python"] == ">=3.11"
    assert metadata["Author"] and metadata["Keywords"] and metadata["Description-Content-Type"] == "text/markdown"
    assert "Programming Language :: Python :: 3.11" in metadata.get_all("Classifier")
    assert "mcp-app-server = app_server.process.startup:launch" in files[f"{info}/entry_points.txt"].decode()
    # mcp_runtime loads its public names from this stub at run time (lazy_loader.attach_stub).
    assert files["mcp_runtime/__init__.pyi"] == (ROOT / "mcp_runtime" / "__init__.pyi").read_bytes()
    packaged = {name for name in files if name.endswith(".py")}
    in_tree = {str(p.relative_to(ROOT)) for package in ("app_server", "mcp_runtime", "protocol")
               for p in (ROOT / package).rglob("*.py")}
    assert packaged == in_tree


def test_the_daemon_client_runs_the_artifact_command_without_the_checkout_path(monkeypatch, tmp_path) -> None:
    command = [sys.executable, "-I", "-m", "app_server"]
    monkeypatch.setenv(DAEMON_COMMAND_ENV, json.dumps(command))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    with running_daemon(tmp_path / "data") as daemon:
        assert daemon.initialize()["serverInfo"]["name"] == "mcp-app-server"
        pid = daemon.process.pid
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
        environment = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert [a.decode() for a in argv[: len(command)]] == command
    assert not any(entry.startswith(b"PYTHONPATH=") for entry in environment)
