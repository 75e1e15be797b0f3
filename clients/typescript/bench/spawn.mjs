// The client's spawn budget (SPEC §8): `AppServerClient.spawn` resolves within 1.2x a bare Node spawn of the same
// daemon plus one `initialize` round trip written by hand. Both are measured interleaved, round by round:
//   first spawn  a fresh Node process per start that imported the package at its start, as a host does (the
//                validators load inside spawn, while the daemon starts; each side loads Node's child_process
//                inside the timed part): the budget's case;
//   warm         one process, package and validators loaded (every later spawn, a restart);
//   with import  a fresh process per start, the package's import timed too (for information: module loading).
// Prints medians and ratios; asserts nothing.
//
//   npm run bench --workspace clients/typescript [-- --rounds 20]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const BUDGET = 1.2;
const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const PYTHON = process.env.MCP_APP_SERVER_PYTHON ?? join(ROOT, ".venv", "bin", "python");
const DAEMON = [PYTHON, ["-m", "app_server"]];
const HELLO = { clientInfo: { name: "bench", version: "1.0.0" } };

/** Spawn the daemon and time until its answer to a hand-written `initialize` is read (Node's spawn loaded, too). */
async function bare(dataDir) {
  const started = performance.now();
  const { spawn } = await import("node:child_process");
  const child = spawn(DAEMON[0], [...DAEMON[1], "--data-dir", dataDir], { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
  child.stderr.resume();
  child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: HELLO })}\n`);
  let text = "";
  await new Promise((resolve, reject) => {
    child.stdout.on("data", (chunk) => {
      text += chunk;
      if (text.includes("\n")) resolve();
    });
    child.on("close", () => reject(new Error(`the daemon exited before answering: ${text}`)));
  });
  const elapsed = performance.now() - started;
  if (!JSON.parse(text.slice(0, text.indexOf("\n"))).result) throw new Error(`initialize failed: ${text}`);
  child.stdin.end();
  await new Promise((resolve) => child.once("close", resolve));
  return elapsed;
}

/** `AppServerClient.spawn` until it resolves (initialize answered, initialized sent). */
async function client(dataDir) {
  const { AppServerClient } = await import("mcp-app-server-client");
  const started = performance.now();
  const spawned = await AppServerClient.spawn(DAEMON[0], DAEMON[1], {
    dataDir,
    cwd: ROOT,
    clientInfo: HELLO.clientInfo,
  });
  const elapsed = performance.now() - started;
  await spawned.close();
  return elapsed;
}

/** The package's import, then `AppServerClient.spawn` until it resolves. */
async function imported(dataDir) {
  const started = performance.now();
  const { AppServerClient } = await import("mcp-app-server-client");
  const spawned = await AppServerClient.spawn(DAEMON[0], DAEMON[1], {
    dataDir,
    cwd: ROOT,
    clientInfo: HELLO.clientInfo,
  });
  const elapsed = performance.now() - started;
  await spawned.close();
  return elapsed;
}

const VARIANTS = { bare, client, imported };

/** One start in a fresh Node process: the time it prints. */
async function fresh(variant, dataDir) {
  const self = fileURLToPath(import.meta.url);
  const { execFile } = await import("node:child_process");
  const { stdout } = await promisify(execFile)(process.execPath, [self, "--once", variant, dataDir], { cwd: ROOT });
  return Number(stdout.trim());
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

async function measure(label, run, rounds, dataDir, variant = "client") {
  const times = { bare: [], [variant]: [] };
  for (let round = 0; round < rounds; round += 1) {
    const order = round % 2 === 0 ? ["bare", variant] : [variant, "bare"];
    for (const one of order) times[one].push(await run(one, dataDir));
  }
  const bareMs = median(times.bare);
  const clientMs = median(times[variant]);
  const ratio = clientMs / bareMs;
  const met = ratio <= BUDGET ? "met" : "NOT met";
  console.log(
    `${label.padEnd(44)} bare ${bareMs.toFixed(1).padStart(6)} ms   client ${clientMs.toFixed(1).padStart(6)} ms   ` +
      `${ratio.toFixed(2)}x  (budget <= ${BUDGET}x: ${met})`,
  );
}

async function main(argv) {
  if (argv[0] === "--once") {
    const elapsed = await VARIANTS[argv[1]](argv[2]);
    process.stdout.write(`${elapsed}\n`);
    return;
  }
  const at = argv.indexOf("--rounds");
  const rounds = at >= 0 ? Number(argv[at + 1]) : 20;
  if (!(rounds >= 15)) throw new Error("--rounds: 15 or more");
  const dataDir = mkdtempSync(join(tmpdir(), "mcp-app-server-client-bench-"));
  try {
    await bare(dataDir); // the data dir made and the daemon's modules in the page cache before anything is timed
    console.log(`client spawn vs bare spawn + initialize (SPEC §8), medians of ${rounds} interleaved rounds`);
    await measure("first spawn (fresh process, package imported)", fresh, rounds, dataDir);
    await measure("warm (package and validators loaded)", (variant, dir) => VARIANTS[variant](dir), rounds, dataDir);
    await measure("with import (fresh process, import timed)", fresh, rounds, dataDir, "imported");
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main(process.argv.slice(2));
