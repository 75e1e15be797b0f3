"""The kept launches' key (``kept_launch``): what is read back is exactly what was kept, and only for the store file
and the deployment it was kept for."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_runtime.session.kept_launch import KEPT_FILE, Planned, _load, digest, keep, launch_identity

PLANNED = [Planned("/bin/cat", ("cat", "-u"), (("HOME", "/home/u"), ("TOKEN", "t")), None)]
SETTINGS = (["http", "stdio"], (), "auto", None, "auto")


def _kept(data_dir: Path, store: bytes, identity: str) -> None:
    (data_dir / "mcps.json").write_bytes(store)
    keep(data_dir, identity, ("mcps.json", digest(store)), PLANNED)


def test_what_is_kept_is_read_back_for_the_same_store_and_settings(tmp_path: Path) -> None:
    identity = launch_identity(SETTINGS, None)
    _kept(tmp_path, b'{"version": 1}', identity)
    assert (tmp_path / KEPT_FILE).stat().st_mode & 0o777 == 0o600
    assert _load(tmp_path, launch_identity(SETTINGS, None)) == PLANNED


def test_a_changed_store_reads_nothing(tmp_path: Path) -> None:
    identity = launch_identity(SETTINGS, None)
    _kept(tmp_path, b'{"version": 1}', identity)
    (tmp_path / "mcps.json").write_bytes(b'{"version": 1, "mcpServers": {}}')
    assert _load(tmp_path, identity) is None


def test_other_settings_or_another_policy_read_nothing(tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text('{"deny": []}')
    _kept(tmp_path, b'{"version": 1}', launch_identity(SETTINGS, str(policy)))
    assert _load(tmp_path, launch_identity((["stdio"], *SETTINGS[1:]), str(policy))) is None
    policy.write_text('{"deny": [{"name": "*"}]}')
    assert _load(tmp_path, launch_identity(SETTINGS, str(policy))) is None
    assert _load(tmp_path, launch_identity(SETTINGS, None)) is None


def test_a_damaged_kept_file_reads_nothing(tmp_path: Path) -> None:
    identity = launch_identity(SETTINGS, None)
    _kept(tmp_path, b'{"version": 1}', identity)
    document = json.loads((tmp_path / KEPT_FILE).read_text())
    document["launches"] = [{"executable": "/bin/cat"}]
    (tmp_path / KEPT_FILE).write_text(json.dumps(document))
    assert _load(tmp_path, identity) is None
    (tmp_path / KEPT_FILE).write_text("not json")
    assert _load(tmp_path, identity) is None
    document["store"] = "../elsewhere.json"
    (tmp_path / KEPT_FILE).write_text(json.dumps(document))
    assert _load(tmp_path, identity) is None
