"""Runs the bundle as a desktop app would on a machine with no Python: moved out of the checkout, in a mount
namespace where every Python installation, the venv and the checkout's packages are hidden, with an environment
of PATH and HOME only (plus a host LD_LIBRARY_PATH). It must answer ``initialize``, run a tool of the npm
``server-everything`` (Node, not Python) in a thread, fail an unreachable HTTPS server with a typed error (its TLS
stack loads), hand its children the host's library path rather than its own, and exit 0 on stdin EOF. And the pid
a host spawns must be the daemon itself: SIGKILL to it takes its stdio children along; the bootloader's ``_PYI_*``
variables never reach a child, even one whose config names them. Before it runs, the bundle itself is read: no
RUNPATH outside ``$ORIGIN``, no development tool (mypy, pytest, ruff, hypothesis), no install record
(``direct_url.json``, which names the build machine's folders or an editable checkout).

    python packaging/pyinstaller/check_standalone.py [dist/mcp-app-server]

Needs root (``unshare --mount``), as on the project's machines and CI.
"""

from __future__ import annotations

import argparse
import glob
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testing.daemon_client import DaemonError, JsonLinesClient  # noqa: E402
from testing.fixtures import everything_config  # noqa: E402

HOST_LIBRARY_PATH = "/opt/host-libraries"
"""A library path the host sets: the bundle's children must see exactly this, not the bundle's folder."""


def python_locations() -> list[str]:
    """Every directory a Python could start from or import from here, to be hidden."""
    places = {sys.prefix, sys.base_prefix, *(str(ROOT / p) for p in ("app_server", "mcp_runtime", "protocol"))}
    places -= {"/usr", "/usr/local", "/"}
    for pattern in ("/usr/lib/python3*", "/usr/local/lib/python3*", "/usr/lib/x86_64-linux-gnu/python3*",
                    "/root/.pyenv", "/opt/python*"):
        places.update(glob.glob(pattern))
    found = sorted(p for p in places if Path(p).is_dir())
    return [p for p in found if not any(Path(p).is_relative_to(other) and p != other for other in found)]


def namespace_command(bundle: Path, home: Path, data_dir: Path) -> list[str]:
    hide = " && ".join(f"mount -t tmpfs none {shlex.quote(p)}" for p in python_locations())
    pythons = "python3 /usr/bin/python3 /usr/local/bin/python3 " + shlex.quote(sys.executable)
    no_python = f"for p in {pythons}; do if $p -c pass 2>/dev/null; then echo \"$p still runs\" >&2; exit 97; fi; done"
    run = shlex.join(["env", "-i", "PATH=/usr/bin:/bin", f"HOME={home}", f"LD_LIBRARY_PATH={HOST_LIBRARY_PATH}",
                      str(bundle), "--data-dir", str(data_dir)])
    script = f"{hide} && {no_python} && exec {run}"
    return ["unshare", "--mount", "--fork", "sh", "-c", script]


def check(client: JsonLinesClient) -> list[str]:
    notes = []
    result = client.initialize()
    assert result["serverInfo"]["name"] == "mcp-app-server", result
    notes.append(f"initialize answered: {result['serverInfo']}")
    config = {**everything_config(), "envVars": ["LD_LIBRARY_PATH"]}
    client.request("mcpServer/create", {"name": "ev", "config": config})
    thread = client.request("thread/start", {"servers": ["ev"]})["thread"]["id"]
    answer = client.request("mcpServer/tool/call", {"threadId": thread, "server": "ev", "tool": "get-env"}, 60)
    child_env = json.loads(answer["content"][0]["text"])
    assert child_env.get("LD_LIBRARY_PATH") == HOST_LIBRARY_PATH, child_env.get("LD_LIBRARY_PATH")
    notes.append(f"tool call in a thread (node server-everything); child LD_LIBRARY_PATH {HOST_LIBRARY_PATH}")
    client.request("mcpServer/create", {"name": "tls", "config": {"type": "http", "url": "https://127.0.0.1:9/mcp"}})
    try:
        client.request("mcpServer/start", {"name": "tls"}, 60)
    except DaemonError as exc:
        assert exc.code == -32014, exc
        notes.append(f"unreachable HTTPS server: {exc.code} {exc.reason}")
    else:
        raise AssertionError("a server on a closed port started")
    return notes


DEV_TOOLS = ("mypy", "pytest", "_pytest", "ruff", "hypothesis")


def runpath_problems(bundle: Path) -> list[str]:
    """ELF files whose RUNPATH or RPATH names a folder other than one relative to ``$ORIGIN``."""
    problems = []
    for path in sorted(bundle.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        with path.open("rb") as file:
            if file.read(4) != b"\x7fELF":
                continue
        dynamic = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=False).stdout
        for line in dynamic.splitlines():
            if "(RUNPATH)" in line or "(RPATH)" in line:
                entries = line.split("[", 1)[1].rstrip("]").split(":")
                foreign = [entry for entry in entries if entry and not entry.startswith("$ORIGIN")]
                if foreign:
                    problems.append(f"{path.relative_to(bundle)}: {':'.join(foreign)}")
    return problems


def contents(bundle: Path) -> list[str]:
    """What the bundle must not carry; each finding names its path."""
    problems = [f"RUNPATH outside the bundle: {problem}" for problem in runpath_problems(bundle)]
    for path in sorted(bundle.rglob("*")):
        name = path.name.split(".")[0].split("-")[0]
        if name in DEV_TOOLS and (path.is_dir() or path.suffix in (".py", ".pyc", ".so")):
            problems.append(f"development tool: {path.relative_to(bundle)}")
        if path.name == "direct_url.json":
            problems.append(f"install record: {path.relative_to(bundle)}")
    return problems


def running(pid: str) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def killed_leaves_no_child(program: Path, home: Path) -> str:
    """PyInstaller's bootloader re-executes itself in place (same pid), so the host's SIGKILL reaches the daemon."""
    process = subprocess.Popen([str(program), "--data-dir", str(home / "killed")], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env={"PATH": "/usr/bin:/bin", "HOME": str(home)})
    assert process.stdin is not None and process.stdout is not None
    try:
        client = JsonLinesClient(process.stdout, process.stdin)
        client.initialize()
        environ = Path(f"/proc/{process.pid}/environ").read_bytes().split(b"\0")
        bootloader = sorted(entry.split(b"=", 1)[0].decode() for entry in environ if entry.startswith(b"_PYI_"))
        config = {**everything_config(), "envVars": bootloader}
        client.request("mcpServer/create", {"name": "ev", "config": config})
        client.request("mcpServer/start", {"name": "ev"}, 60)
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        assert children, "the MCP server is not a child of the spawned pid"
        thread = client.request("thread/start", {"servers": ["ev"]})["thread"]["id"]
        answer = client.request("mcpServer/tool/call", {"threadId": thread, "server": "ev", "tool": "get-env"}, 60)
        leaked = sorted(name for name in json.loads(answer["content"][0]["text"]) if name.startswith("_PYI_"))
        assert not leaked, f"the bootloader's variables reached a stdio server: {leaked}"
    finally:
        process.kill()
        process.wait()
    deadline = time.monotonic() + 10
    while (alive := [pid for pid in children if running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive, f"children {alive} outlived the SIGKILLed daemon"
    return (f"SIGKILL to the spawned pid ended its child {children}; none of the bootloader's {bootloader} reached a "
            "stdio server that named them in envVars")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bundle", nargs="?", type=Path, default=ROOT / "dist" / "mcp-app-server")
    args = parser.parse_args()
    problems = contents(args.bundle)
    for problem in problems:
        print(f"FAIL {problem}")
    if problems:
        return 1
    print("PASS no RUNPATH outside $ORIGIN, no development tool, no install record in the bundle")
    with tempfile.TemporaryDirectory(prefix="mcp-standalone-") as tmp:
        moved = Path(tmp) / "app" / "mcp-app-server"
        shutil.copytree(args.bundle, moved, symlinks=True)
        (Path(tmp) / "home").mkdir()
        stderr_path = Path(tmp) / "stderr.log"
        with stderr_path.open("wb") as stderr:
            process = subprocess.Popen(
                namespace_command(moved / "mcp-app-server", Path(tmp) / "home", Path(tmp) / "data"),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
            )
            assert process.stdin is not None and process.stdout is not None
            client = JsonLinesClient(process.stdout, process.stdin)
            try:
                notes = check(client)
            except (AssertionError, DaemonError, TimeoutError) as exc:
                process.kill()
                process.wait()
                print(f"FAIL {type(exc).__name__}: {exc}\n--- stderr ---\n{stderr_path.read_text()[-4000:]}")
                return 1
            process.stdin.close()
            code = process.wait(15)
        try:
            notes.append(killed_leaves_no_child(moved / "mcp-app-server", Path(tmp) / "home"))
        except (AssertionError, DaemonError, TimeoutError) as exc:
            print(f"FAIL {type(exc).__name__}: {exc}")
            return 1
        for note in notes:
            print(f"PASS {note}")
        print(f"{'PASS' if code == 0 else 'FAIL'} exit code {code} after stdin EOF")
        print(f"hidden: {', '.join(python_locations())}")
        return 0 if code == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
