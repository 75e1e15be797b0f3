"""The launches autostart planned are kept for the next start, whose thread starts them the moment ``initialized``
is read, before the daemon has imported what reads the store (SPEC §8), seen from outside.

Each server's command is ``sh -c 'echo $$ >> MARKER; exec …'``: one line per process started (the shell's pid is
the server's after ``exec``). Which start began them is in the daemon's debug line ``kept_launches_started``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from testing.daemon_client import Daemon, running_daemon, store_servers
from testing.fixtures import marked_fixture_config
from testing.process_tree import started, wait_gone

pytestmark = pytest.mark.daemon

STARTUP = "mcpServer/startupStatus/updated"
CLIENT = {"clientInfo": {"name": "tests", "version": "0"}}
def _pids(marker: Path) -> list[int]:
    return [int(pid) for pid in marker.read_text().split()] if marker.exists() else []


def _ready(daemon: Daemon, names: list[str]) -> None:
    for name in names:
        daemon.wait_notification(STARTUP, lambda p, n=name: (p["name"], p["status"]) == (n, "ready"), 90)


def _kept_children(daemon: Daemon) -> int:
    """How many children autostart found started from kept launches (the daemon has stopped)."""
    for line in daemon.stderr().splitlines():
        if '"kept_launches_started"' in line:
            return int(json.loads(line)["children"])
    raise AssertionError("autostart did not run")


def _launch(data_dir: Path, names: list[str], env: dict[str, str] | None = None) -> int:
    """One start as a host makes it; how many children came from kept launches."""
    with running_daemon(data_dir, env) as daemon:
        daemon.request("initialize", CLIENT)
        daemon.notify("initialized")
        _ready(daemon, names)
    return _kept_children(daemon)


def test_the_last_starts_launches_begin_at_initialized_and_their_sessions_hold_them(
    data_dir: Path, tmp_path: Path
) -> None:
    markers = {name: tmp_path / f"{name}.pids" for name in ("a", "b")}
    store_servers(data_dir, {name: marked_fixture_config(marker) for name, marker in markers.items()})
    assert _launch(data_dir, list(markers)) == 0  # the first autostart plans them and keeps what it planned
    assert (data_dir / "launches.json").stat().st_mode & 0o777 == 0o600
    before = {name: _pids(marker) for name, marker in markers.items()}
    with running_daemon(data_dir) as daemon:
        daemon.request("initialize", CLIENT)
        assert [s["name"] for s in daemon.request("mcpServer/list", {})["data"]] == ["a", "b"]
        assert {name: _pids(marker) for name, marker in markers.items()} == before, "started before initialized"
        assert daemon.notifications(STARTUP) == []
        daemon.notify("initialized")
        _ready(daemon, list(markers))
        for name, marker in markers.items():
            pids = _pids(marker)
            assert len(pids) == len(before[name]) + 1, f"{name} was started {len(pids) - len(before[name])} times"
            os.kill(pids[-1], 0)  # the child started from the kept launch is the one serving
        rows = daemon.request("mcpServerStatus/list", {})["data"]
        assert {row["name"]: row["runtimeStatus"] for row in rows} == {"a": "connected", "b": "connected"}
    assert _kept_children(daemon) == 2


def test_a_store_changed_since_the_last_start_starts_nothing_kept(data_dir: Path, tmp_path: Path) -> None:
    old, new = tmp_path / "old.pids", tmp_path / "new.pids"
    store_servers(data_dir, {"edited": marked_fixture_config(old)})
    _launch(data_dir, ["edited"])
    with running_daemon(data_dir) as editor:  # a host that edits and never says initialized: no autostart
        editor.request("initialize", CLIENT)
        editor.request("mcpServer/update", {"name": "edited", "config": marked_fixture_config(new)})
    kept_before = len(_pids(old))
    assert _launch(data_dir, ["edited"]) == 0
    assert len(_pids(old)) == kept_before, "the kept launch of the old config ran"
    assert len(_pids(new)) == 1


def test_a_kept_launch_its_config_no_longer_plans_is_stopped_and_the_server_started_anew(
    data_dir: Path, tmp_path: Path
) -> None:
    """The store is the same but the daemon's environment is not (``TERM`` is passed to every server): the child
    started from the kept launch is not the one the config plans now, so it goes and a new one serves."""
    marker = tmp_path / "pids"
    store_servers(data_dir, {"server": marked_fixture_config(marker)})
    _launch(data_dir, ["server"], {"TERM": "xterm"})
    first = len(_pids(marker))
    with running_daemon(data_dir, {"TERM": "dumb"}) as daemon:
        daemon.request("initialize", CLIENT)
        daemon.notify("initialized")
        _ready(daemon, ["server"])
        kept, serving = _pids(marker)[first:]
        assert wait_gone({kept: started(kept)}) == []
        os.kill(serving, 0)
        assert daemon.request("mcpServerStatus/list", {})["data"][0]["runtimeStatus"] == "connected"
    assert _kept_children(daemon) == 1


def test_a_planted_link_in_place_of_the_kept_file_is_left_alone_and_the_servers_start(
    data_dir: Path, tmp_path: Path
) -> None:
    marker, target = tmp_path / "pids", tmp_path / "elsewhere.json"
    store_servers(data_dir, {"server": marked_fixture_config(marker)})
    target.write_text("{}")
    (data_dir / "launches.json").symlink_to(target)
    before = len(_pids(marker))
    assert _launch(data_dir, ["server"]) == 0
    assert _launch(data_dir, ["server"]) == 0
    assert target.read_text() == "{}" and (data_dir / "launches.json").is_symlink()
    assert len(_pids(marker)) == before + 2


def test_a_launch_with_a_secret_named_variable_is_not_kept_and_its_value_rests_in_the_store_alone(
    data_dir: Path, tmp_path: Path
) -> None:
    secret = "sk-kept-launch-0123456789"
    store_servers(data_dir, {
        "plain": marked_fixture_config(tmp_path / "plain.pids", env={"LOG_LEVEL": "debug"}),
        "keyed": marked_fixture_config(tmp_path / "keyed.pids", env={"API_KEY": secret}),
    })  # fmt: skip
    assert _launch(data_dir, ["plain", "keyed"]) == 0
    kept = (data_dir / "launches.json").read_text()
    assert "LOG_LEVEL" in kept and secret not in kept
    assert _launch(data_dir, ["plain", "keyed"]) == 1  # the plain one alone started from what was kept
