"""Credential files and variables a config names, tried as a hostile config would (SPEC §5): the daemon reads a
credential file only inside a folder the host named at start (``--credential-dir``), only a regular file it
reaches without a link, and sends only a JWT; a FIFO or a terminal as the path never holds the daemon's workers;
``--allow-env`` bounds every variable a config names, ``*EnvVar`` included."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scripts.smoke.fixtures.launch import oauth_fixture
from testing.daemon_client import DaemonError, running_daemon
from testing.oauth import Shown, fixture_get, fixture_origin, pem_pair

pytestmark = pytest.mark.daemon

PEM_PRIVATE, _ = pem_pair("ES256")


def workload(url: str, assertion_file: Path | str) -> dict[str, Any]:
    oauth = {"grant": "jwtBearer", "clientId": "ci-runner", "expectedIssuer": fixture_origin(url),
             "assertionFile": str(assertion_file)}
    return {"type": "http", "url": url, "oauth": oauth}


@pytest.fixture
def kept(tmp_path: Path) -> Path:
    folder = tmp_path / "kept"
    folder.mkdir()
    return folder


@pytest.fixture
def shown(data_dir: Path, kept: Path) -> Iterator[Shown]:
    with running_daemon(data_dir, args=("--credential-dir", str(kept))) as d:
        d.initialize()
        yield Shown(d)


def refused_start(shown: Shown, name: str) -> DaemonError:
    with pytest.raises(DaemonError) as err:
        shown.request("mcpServer/start", {"name": name}, timeout=20)
    return err.value


def test_without_a_credential_folder_no_file_is_read(data_dir: Path, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(PEM_PRIVATE)
    with running_daemon(data_dir) as d, oauth_fixture() as url:
        d.initialize()
        with pytest.raises(DaemonError) as err:
            d.request("mcpServer/create", {"name": "sec", "config": workload(url, token)})
        assert (err.value.code, err.value.reason, err.value.data["path"]) == (-32012, "unsafePath", str(token))
        assert d.request("mcpServer/list")["data"] == []


def test_a_file_outside_the_folders_the_host_named_is_refused_typed(shown: Shown, tmp_path: Path) -> None:
    with oauth_fixture() as url:
        for path in (tmp_path / "elsewhere", "/proc/self/environ", f"{tmp_path}/kept/../elsewhere"):
            with pytest.raises(DaemonError) as err:
                shown.request("mcpServer/create", {"name": "sec", "config": workload(url, path)})
            assert (err.value.code, err.value.reason) == (-32012, "unsafePath")
        assert fixture_get(url, "stats")["jwtBearerRequests"] == 0


def test_a_link_a_key_or_environ_inside_the_folder_is_never_sent(shown: Shown, kept: Path, tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    key.write_text(PEM_PRIVATE)
    (kept / "link").symlink_to(key)
    (kept / "environ").symlink_to("/proc/self/environ")
    (kept / "sub").symlink_to(tmp_path)  # a linked folder on the way
    (kept / "key.pem").write_text(PEM_PRIVATE)  # a regular file, but no JWT
    with oauth_fixture() as url:
        for name, path in [("link", kept / "link"), ("environ", kept / "environ"), ("sub", kept / "sub" / "key.pem"),
                           ("pem", kept / "key.pem")]:
            shown.request("mcpServer/create", {"name": name, "config": workload(url, path)})
            refused = refused_start(shown, name)
            assert (refused.reason, refused.data["step"]) == ("oauthFailed", "assertion")
        assert fixture_get(url, "stats")["jwtBearerRequests"] == 0
    assert shown.leaked([PEM_PRIVATE.splitlines()[1]]) == []


def test_a_fifo_or_a_terminal_as_the_credential_never_holds_the_daemon(shown: Shown, kept: Path) -> None:
    os.mkfifo(kept / "fifo")
    (kept / "stdin").symlink_to("/proc/self/fd/0")
    with oauth_fixture() as url:
        names = [f"f{i}" for i in range(12)]
        for index, name in enumerate(names):
            path = kept / ("fifo" if index % 2 else "stdin")
            shown.request("mcpServer/create", {"name": name, "config": workload(url, path)})
        failures: list[DaemonError] = []

        def start(name: str) -> None:
            failures.append(refused_start(shown, name))

        starts = [threading.Thread(target=start, args=(name,)) for name in names]
        for thread in starts:
            thread.start()
        for thread in starts:
            thread.join(30)
        assert sorted((f.reason, f.data["step"]) for f in failures) == [("oauthFailed", "assertion")] * len(names)
        # The shared worker threads are free: file work of other requests is answered at once.
        assert len(shown.request("mcpServer/list", timeout=5)["data"]) == len(names)
        assert fixture_get(url, "stats")["jwtBearerRequests"] == 0


def test_allow_env_bounds_every_variable_a_config_names(data_dir: Path) -> None:
    env = {**os.environ, "APP_SECRET": "app-secret-1234", "DAEMON_ONLY": "not-for-servers"}
    with running_daemon(data_dir, env=env, args=("--allow-env", "APP_*")) as d, oauth_fixture() as url:
        d.initialize()
        secret_by = {"clientId": "app", "clientSecretEnvVar": "DAEMON_ONLY", "grant": "clientCredentials",
                     "expectedIssuer": fixture_origin(url)}
        for config in (
            {"type": "http", "url": url, "oauth": secret_by},
            {"type": "http", "url": url, "bearerTokenEnvVar": "DAEMON_ONLY"},
            {"command": "true", "envVars": ["APP_SECRET", "DAEMON_ONLY"]},
        ):
            with pytest.raises(DaemonError) as err:
                d.request("mcpServer/create", {"name": "sec", "config": config})
            refused = (err.value.code, err.value.reason, err.value.data["variable"])
            assert refused == (-32012, "unsafeEnv", "DAEMON_ONLY")
        allowed = {"type": "http", "url": url, "oauth": {**secret_by, "clientSecretEnvVar": "APP_SECRET"}}
        d.request("mcpServer/create", {"name": "sec", "config": allowed})
