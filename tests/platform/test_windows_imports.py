"""Windows (SPEC §10): every module imports there, and what needs POSIX is refused with one line, not a traceback.

``make typecheck`` is the gate (mypy ``--platform win32``); this catches what only running the imports shows. In a
subprocess, every module of ours is imported once as usual (so third-party modules load as they do here), then
forgotten and imported again with ``sys.platform`` set to ``win32``, the POSIX-only modules made unimportable and
the POSIX-only names of ``os``, ``signal`` and ``socket`` removed.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from testing.daemon_client import ROOT

pytestmark = pytest.mark.daemon

AS_WINDOWS = r"""
import asyncio, contextlib, importlib, io, json, os, signal, socket, sys
from pathlib import Path

ROOT = Path(sys.argv[1])
PACKAGES = ("protocol", "mcp_runtime", "app_server")
names = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for package in PACKAGES
    for path in (ROOT / package).rglob("*.py")
    if path.name != "__main__.py"  # importing it runs the program
)
for name in names:
    importlib.import_module(name)
for name in list(sys.modules):
    if name.split(".")[0] in PACKAGES:
        del sys.modules[name]

sys.platform = "win32"
for missing in ("fcntl", "termios", "pwd", "grp", "resource", "uvloop"):
    sys.modules[missing] = None
POSIX_ONLY = {
    os: ("O_NOFOLLOW", "O_DIRECTORY", "O_NONBLOCK", "fchmod", "killpg", "getpgid", "setsid", "getuid", "set_blocking"),
    signal: ("SIGKILL", "SIGHUP", "SIGQUIT", "SIGPIPE"),
    socket: ("AF_UNIX",),
    asyncio: ("start_unix_server", "open_unix_connection"),
}
for module, attributes in POSIX_ONLY.items():
    for attribute in attributes:
        if hasattr(module, attribute):
            delattr(module, attribute)

failures = {}
for name in names:
    try:
        importlib.import_module(name)
    except Exception as exc:
        failures[name] = f"{type(exc).__name__}: {exc}"
import mcp_runtime
for name in mcp_runtime.__all__:
    try:
        getattr(mcp_runtime, name)
    except Exception as exc:
        failures[f"mcp_runtime.{name}"] = f"{type(exc).__name__}: {exc}"

from pathlib import Path

from app_server.process import options, startup
refusals = {}
for argv in (["--data-dir", sys.argv[2]], ["--data-dir", sys.argv[2], "--listen", "unix:" + sys.argv[2] + "/s"]):
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        args = options.parse(argv)
        choice = startup.SecretStoreChoice(args.secret_store, sys.argv[2])
        code = startup.serve(args, Path(sys.argv[2]), startup.StopSignals(), None, choice)
    refusals["listen" if "--listen" in argv else "serve"] = [code, stderr.getvalue()]
print(json.dumps({"modules": len(names), "failures": failures, "refusals": refusals}))
"""


def test_every_module_imports_as_on_windows_and_serving_is_refused_in_one_line(tmp_path: object) -> None:
    done = subprocess.run(
        [sys.executable, "-c", AS_WINDOWS, str(ROOT), str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["modules"] > 100
    assert report["failures"] == {}
    serve, listen = report["refusals"]["serve"], report["refusals"]["listen"]
    assert serve[0] == 2 and serve[1].count("\n") == 1 and "not supported on Windows" in serve[1]
    assert listen == [2, "mcp-app-server: --listen refused: Unix sockets are not supported on Windows\n"]
