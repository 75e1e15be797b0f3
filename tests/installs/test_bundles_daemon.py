"""MCP Bundles through the real daemon (SPEC §15): bundles packed and signed by ``@anthropic-ai/mcpb``'s CLI are
inspected and installed into the data dir and run; hand-made archives meet the guards."""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from testing.daemon_client import Daemon, DaemonError, running_daemon

pytestmark = pytest.mark.daemon

ROOT = Path(__file__).resolve().parents[2]
MCPB = ROOT / "node_modules" / ".bin" / "mcpb"
FIXTURES = ROOT / "scripts" / "smoke" / "fixtures"


def manifest(version: str = "1.0.0", **extra: Any) -> dict[str, Any]:
    return {
        "manifest_version": "0.3",
        "name": "fixture-bundle",
        "display_name": "Fixture bundle",
        "version": version,
        "description": "The SDK fixture server, bundled.",
        "author": {"name": "Tests"},
        "server": {
            "type": "python",
            "entry_point": "server/fixture_server.py",
            "mcp_config": {
                "command": sys.executable,  # the test's Python has the SDK; a bundle names its interpreter so
                "args": ["${__dirname}${/}server${/}fixture_server.py", "--name", "${user_config.label}"],
                "env": {"BUNDLE_TOKEN": "${user_config.token}"},
            },
        },
        "tools": [{"name": "echo", "description": "Echoes"}],
        "user_config": {
            "label": {"type": "string", "title": "Label", "description": "The server's name", "default": "bundled"},
            "token": {
                "type": "string",
                "title": "Token",
                "description": "A secret",
                "sensitive": True,
                "required": True,
            },
        },
    } | extra


def pack(tmp: Path, document: dict[str, Any], name: str = "fixture.mcpb", sign: bool = False) -> Path:
    folder = tmp / f"src-{name}"
    (folder / "server").mkdir(parents=True)
    shutil.copy(FIXTURES / "fixture_server.py", folder / "server")
    shutil.copy(FIXTURES / "serving.py", folder / "server")
    (folder / "manifest.json").write_text(json.dumps(document))
    out = tmp / name
    subprocess.run([str(MCPB), "pack", str(folder), str(out)], check=True, capture_output=True, timeout=60)
    if sign:
        subprocess.run([str(MCPB), "sign", str(out), "--self-signed"], check=True, capture_output=True, timeout=60)
    return out


def install(d: Daemon, path: Path, name: str = "bund", **inputs: Any) -> dict[str, Any]:
    params = {"name": name, "source": {"bundle": {"path": str(path)}}, "inputs": inputs}
    return d.request("mcpServer/install", params, timeout=60)["server"]  # type: ignore[no-any-return]


def test_inspect_shows_manifest_inputs_compatibility_and_signature(tmp_path: Path, daemon: Daemon) -> None:
    plain, signed = pack(tmp_path, manifest()), pack(tmp_path, manifest(), "signed.mcpb", sign=True)
    seen = daemon.request("mcpServer/bundle/inspect", {"path": str(plain)})
    assert seen["manifest"]["name"] == "fixture-bundle" and seen["manifest"]["displayName"] == "Fixture bundle"
    assert seen["manifest"]["tools"] == [{"name": "echo", "description": "Echoes"}]
    assert {i["key"]: i["secret"] for i in seen["inputs"]} == {"label": False, "token": True}
    assert seen["compatibility"] == {"ok": True} and seen["signature"] == "unsigned"
    assert daemon.request("mcpServer/bundle/inspect", {"path": str(signed)})["signature"] == "signed"
    tampered = tmp_path / "tampered.mcpb"
    data = bytearray(signed.read_bytes())
    content = bytes(data[: data.rfind(b"MCPB_SIG_V1")])
    at = data.find(hashlib.sha256(content).digest())  # the signed digest of the content, inside the PKCS#7 block
    assert at > len(content)
    data[at] ^= 0xFF
    tampered.write_bytes(bytes(data))
    assert daemon.request("mcpServer/bundle/inspect", {"path": str(tampered)})["signature"] == "invalid"


def test_a_bundle_installs_runs_upgrades_keeping_inputs_and_delete_removes_it(tmp_path: Path, data_dir: Path) -> None:
    with running_daemon(data_dir) as d:
        d.initialize()
        with pytest.raises(DaemonError) as missing:
            install(d, pack(tmp_path, manifest()))
        assert missing.value.reason == "missingInput" and missing.value.data["input"] == "token"
        row = install(d, pack(tmp_path, manifest(), "again.mcpb"), token="bundle-secret-1", label="mine")
        folder = data_dir / "bundles" / "fixture-bundle" / "1.0.0"
        assert row["source"] == "bundle:fixture-bundle@1.0.0"
        assert row["config"]["args"] == [str(folder / "server" / "fixture_server.py"), "--name", "mine"]
        assert row["config"]["env"] == {"BUNDLE_TOKEN": "***"}
        assert (folder / "manifest.json").is_file() and stat.S_IMODE(folder.stat().st_mode) == 0o700
        started = d.request("mcpServer/start", {"name": "bund"}, timeout=60)
        assert started["status"]["runtimeStatus"] == "connected"
        newer = install(d, pack(tmp_path, manifest("1.1.0"), "newer.mcpb"))  # no inputs given: the earlier ones
        assert newer["source"] == "bundle:fixture-bundle@1.1.0" and newer["config"]["args"][-1] == "mine"
        assert not folder.exists() and (data_dir / "bundles" / "fixture-bundle" / "1.1.0").is_dir()
        stored = json.loads((data_dir / "mcps.json").read_text())["mcpServers"]["bund"]
        assert "BUNDLE_TOKEN" in stored["env"]  # the sensitive input was kept (in the store or its secret store)
        d.request("mcpServer/delete", {"name": "bund"})
        assert not (data_dir / "bundles" / "fixture-bundle").exists()
        assert "bundle-secret-1" not in d.stderr()


def _zip(path: Path, entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", json.dumps(manifest()))
        for info, data in entries:
            archive.writestr(info, data)
    return path


def _claiming(path: Path, entry: str, size: int) -> Path:
    """The archive with ``entry``'s central directory record claiming ``size`` unpacked bytes (what a zip bomb's
    header says is all the guard has before a byte is written)."""
    data = bytearray(path.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        name_length = int.from_bytes(data[at + 28 : at + 30], "little")
        if data[at + 46 : at + 46 + name_length] == entry.encode():
            data[at + 24 : at + 28] = size.to_bytes(4, "little")
            path.write_bytes(bytes(data))
            return path
        at = data.find(b"PK\x01\x02", at + 4)
    raise AssertionError(f"no central directory record for {entry}")


def _refused(d: Daemon, path: Path) -> DaemonError:
    with pytest.raises(DaemonError) as refused:
        d.request("mcpServer/bundle/inspect", {"path": str(path)})
    with pytest.raises(DaemonError):
        install(d, path, token="x")
    return refused.value


def test_hand_made_archives_meet_the_guards(tmp_path: Path, data_dir: Path) -> None:
    link = zipfile.ZipInfo("server/link")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    fifo = zipfile.ZipInfo("server/pipe")
    fifo.external_attr = (stat.S_IFIFO | 0o600) << 16
    with running_daemon(data_dir) as d:
        d.initialize()
        for entry in ("../escape.txt", "/etc/evil", "server/../../escape"):
            refused = _refused(d, _zip(tmp_path / "dots.mcpb", [(entry, b"x")]))
            assert refused.reason == "unsafeBundle" and refused.code == -32012 and refused.data["entry"] == entry
        assert _refused(d, _zip(tmp_path / "link.mcpb", [(link, b"/etc/passwd")])).reason == "unsafeBundle"
        assert _refused(d, _zip(tmp_path / "fifo.mcpb", [(fifo, b"")])).reason == "unsafeBundle"
        bomb = _refused(d, _zip(tmp_path / "bomb.mcpb", [("zeros.bin", bytes(32 << 20))]))
        assert bomb.reason == "bundleTooLarge" and bomb.data["measure"] == "ratio" and bomb.code == -32013
        many = _refused(d, _zip(tmp_path / "many.mcpb", [(f"f/{i}", b"") for i in range(20_000)]))
        assert (many.reason, many.data["measure"], many.data["limit"]) == ("bundleTooLarge", "files", 20_000)
        huge = _refused(d, _claiming(_zip(tmp_path / "huge.mcpb", [("big.bin", b"x" * 64)]), "big.bin", 600 << 20))
        assert (huge.reason, huge.data["measure"]) == ("bundleTooLarge", "bytes")
        with zipfile.ZipFile(tmp_path / "bad.mcpb", "w") as archive:
            archive.writestr("manifest.json", json.dumps({"manifest_version": "0.3", "name": "x", "version": "1"}))
        bad = _refused(d, tmp_path / "bad.mcpb")
        assert bad.reason == "invalidBundle" and any(e["message"] for e in bad.data["errors"])
        with zipfile.ZipFile(tmp_path / "dots-name.mcpb", "w") as archive:
            archive.writestr("manifest.json", json.dumps(manifest() | {"name": ".."}))
        assert _refused(d, tmp_path / "dots-name.mcpb").reason == "invalidBundle"  # never bundles/../<version>
        assert not (data_dir / "bundles" / "fixture-bundle" / "1.0.0").exists()
        assert not (tmp_path / "escape.txt").exists()


def test_a_bundle_that_would_put_a_sensitive_setting_in_argv_does_not_run_here(
    tmp_path: Path, data_dir: Path, daemon: Daemon
) -> None:
    """SPEC §14: a secret never goes in a child's argv (every user of the machine reads it), and a bundle has no
    other way to pass an argument: inspect says so before consent, install refuses and unpacks nothing."""
    document = manifest()
    document["server"]["mcp_config"]["args"] = ["${__dirname}/server/fixture_server.py", "--key=${user_config.token}"]
    override = manifest()
    override["server"]["mcp_config"]["platform_overrides"] = {sys.platform: {"args": ["${user_config.token}"]}}
    for index, bad in enumerate((document, override)):
        path = pack(tmp_path, bad, f"argv-{index}.mcpb")
        seen = daemon.request("mcpServer/bundle/inspect", {"path": str(path)})
        assert seen["compatibility"]["ok"] is False and "'token'" in seen["compatibility"]["reason"]
        with pytest.raises(DaemonError) as refused:
            install(daemon, path, token="argv-secret-77")
        assert (refused.value.reason, refused.value.data["field"]) == ("unsupported", "compatibility")
        assert "argv-secret-77" not in json.dumps(refused.value.data)
    assert daemon.request("mcpServer/list", {})["data"] == []
    assert not (data_dir / "bundles" / "fixture-bundle").exists()
    assert "argv-secret-77" not in daemon.stderr()


def test_a_refused_bundle_install_unpacks_nothing_and_one_bundle_belongs_to_one_server(
    tmp_path: Path, data_dir: Path
) -> None:
    """Every check comes before a byte is unpacked (a policy refusal, a name taken), and a bundle installed as one
    server cannot be installed as a second one: an upgrade or a delete of either would take the other's files."""
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"deniedServers": [{"command": [sys.executable]}]}))
    folder = data_dir / "bundles" / "fixture-bundle"
    bundle = pack(tmp_path, manifest())
    with running_daemon(data_dir, args=("--policy", str(policy))) as d:
        d.initialize()
        with pytest.raises(DaemonError) as refused:
            install(d, bundle, token="t1")
        assert refused.value.reason == "policyDenied" and not folder.exists()
    with running_daemon(data_dir) as d:
        d.initialize()
        d.request("mcpServer/create", {"name": "taken", "config": {"command": "node", "enabled": False}})
        with pytest.raises(DaemonError) as taken:
            install(d, bundle, name="taken", token="t1")
        assert (taken.value.reason, taken.value.data["name"]) == ("serverExists", "taken") and not folder.exists()
        install(d, bundle, name="first", token="t1")
        with pytest.raises(DaemonError) as second:
            install(d, pack(tmp_path, manifest("2.0.0"), "v2.mcpb"), name="second", token="t2")
        assert (second.value.reason, second.value.data["name"]) == ("serverExists", "first")
        assert (folder / "1.0.0" / "manifest.json").is_file() and not (folder / "2.0.0").exists()
        started = d.request("mcpServer/start", {"name": "first"}, timeout=60)
        assert started["status"]["runtimeStatus"] == "connected"
