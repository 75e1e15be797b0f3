"""What a host carries and waits for, per way the daemon ships (SPEC §10): the checkout's venv, the installed wheel
and the PyInstaller bundle. Sizes on disk, and spawn → ``initialize`` answered (and → first ``mcpServer/list``),
medians over many spawns with a buffered client, each started with a GUI app's environment (PATH and HOME only).

Run after ``make smoke-wheel`` (the wheel installed by pipx under build/pipx) and ``make dist``:
``.venv/bin/python -m bench.artifacts [--starts 15] [--json]``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from bench.dispatch import start_times
from bench.pipe import ROOT, JsonPipe

COMMANDS = {
    "venv": ROOT / ".venv" / "bin" / "mcp-app-server",
    "wheel": ROOT / "build" / "pipx" / "bin" / "mcp-app-server",
    "bundle": ROOT / "dist" / "mcp-app-server" / "mcp-app-server",
}
INSTALLED = {
    "venv": ROOT / ".venv",
    "wheel": ROOT / "build" / "pipx" / "venvs" / "mcp-app-server",
    "bundle": ROOT / "dist" / "mcp-app-server",
}


def disk_mib(path: Path) -> float:
    """Blocks allocated under ``path``, as ``du`` counts them."""
    return sum(p.lstat().st_blocks * 512 for p in [path, *path.rglob("*")]) / 2**20


def gzip_mib(path: Path) -> float:
    """The folder as a .tar.gz: about what it adds to a download."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(path, arcname=path.name)
    return len(buffer.getvalue()) / 2**20


def event_loop(command: Path, env: dict[str, str], data_dir: str) -> str:
    """The loop the daemon reports in its ``serving`` line."""
    done = subprocess.run([str(command), "--data-dir", data_dir], input=b"", env=env, capture_output=True, timeout=30)
    for line in done.stderr.splitlines():
        record = json.loads(line)
        if record.get("event") == "serving":
            return str(record.get("event_loop"))
    return "unknown"


def rss_after_list(command: list[str], env: dict[str, str]) -> float:
    with JsonPipe(command, env) as pipe:
        pipe.initialize()
        pipe.request(1, "mcpServer/list", {})
        pipe.request(2, "thread/list", {})
        return pipe.rss_mib()


def measure(starts: int) -> dict[str, Any]:
    report: dict[str, Any] = {}
    wheels = sorted((ROOT / "dist").glob("mcp_app_server-*.whl"))
    sdists = sorted((ROOT / "dist").glob("mcp_app_server-*.tar.gz"))
    if wheels and sdists:
        report["wheel_kib"] = round(wheels[-1].stat().st_size / 1024, 1)
        report["sdist_kib"] = round(sdists[-1].stat().st_size / 1024, 1)
    with tempfile.TemporaryDirectory() as home:
        env = {"PATH": "/usr/bin:/bin", "HOME": home}
        commands = {name: [str(program), "--data-dir", os.path.join(home, name), "--log-level", "warning"]
                    for name, program in COMMANDS.items() if program.exists()}
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for command in commands.values():
            start_times(command, env)  # warm the page cache
        for _ in range(starts):  # round-robin, so a load change on the machine weighs on each alike
            for name, command in commands.items():
                samples[name].append(start_times(command, env))
        for name, command in commands.items():
            row = {
                "initialize_ms": round(statistics.median(s[0] for s in samples[name]) * 1000, 1),
                "first_list_ms": round(statistics.median(s[1] for s in samples[name]) * 1000, 1),
                "initialize_min_ms": round(min(s[0] for s in samples[name]) * 1000, 1),
                "initialize_max_ms": round(max(s[0] for s in samples[name]) * 1000, 1),
                "rss_mib": round(rss_after_list(command, env), 1),
                "event_loop": event_loop(COMMANDS[name], env, os.path.join(home, name)),
                "disk_mib": round(disk_mib(INSTALLED[name]), 1),
            }
            if name == "bundle":
                row["tar_gz_mib"] = round(gzip_mib(INSTALLED[name]), 1)
            report[name] = row
    report["starts"] = starts
    return report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = measure(args.starts)
    if args.json:
        print(json.dumps(report))
        return
    if "wheel_kib" in report:
        print(f"wheel {report['wheel_kib']} KiB, sdist {report['sdist_kib']} KiB")
    print(f"{'':8} {'initialize':>11} {'first list':>11} {'min-max':>15} {'RSS':>9} {'loop':>8} {'on disk':>10}")
    for name in COMMANDS:
        if name in report:
            row = report[name]
            spread = f"{row['initialize_min_ms']}-{row['initialize_max_ms']}"
            extra = f"   (.tar.gz {row['tar_gz_mib']} MiB)" if "tar_gz_mib" in row else ""
            print(f"{name:8} {row['initialize_ms']:8.1f} ms {row['first_list_ms']:8.1f} ms {spread:>15} "
                  f"{row['rss_mib']:5.1f} MiB {row['event_loop']:>8} {row['disk_mib']:6.1f} MiB{extra}")
    print(f"medians over {report['starts']} spawns each; GUI-like environment (PATH=/usr/bin:/bin, HOME)")


if __name__ == "__main__":
    main()
