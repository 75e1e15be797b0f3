"""The SDK is imported off the event loop and one thread at a time: a login's import on the loop while a start's
worker imported it deadlocked Python's module locks (``_DeadlockError``, an ``internal`` answer to the login)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from testing.fixtures import ROOT

_PROBE = textwrap.dedent(
    """
    import json, sys, tempfile, threading, time
    from pathlib import Path

    imports = []  # (module, thread, started at) of every SDK module found, in order

    class Recorder:
        def find_spec(self, name, path=None, target=None):
            if name == "mcp" or name.startswith("mcp."):
                imports.append((name, threading.current_thread().name, time.monotonic()))
            return None

    sys.meta_path.insert(0, Recorder())

    import anyio
    from mcp_runtime._sdk_compat import load_sdk
    from mcp_runtime.oauth.login import OAuthLogins

    async def main():
        assert "mcp" not in sys.modules
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(load_sdk)  # concurrent starts
            async with OAuthLogins(Path(tempfile.mkdtemp())):
                from mcp.client.auth import OAuthClientProvider  # what a login's flow imports on the loop
                from mcp.shared.auth import OAuthClientMetadata  # noqa: F401
        workers = {thread for _, thread, _ in imports}
        print(json.dumps({"count": len(imports), "threads": sorted(workers), "main": threading.main_thread().name}))

    anyio.run(main)
    """
)


def test_starts_and_a_login_import_the_sdk_in_one_worker_at_a_time_never_on_the_loop() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["count"] > 10  # the SDK was imported here, not before
    assert seen["main"] not in seen["threads"]
    assert len(seen["threads"]) == 1, seen["threads"]
