// The example host (examples/host.ts, public API only) runs a whole host session against the real daemon.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { FIXTURES, PYTHON, ROOT, dataDir } from "./support.js";

const HOST = fileURLToPath(new URL("../examples/host.js", import.meta.url));

test("the example host does a full session through the package's public API", async () => {
  const { stdout, stderr } = await promisify(execFile)(
    process.execPath,
    // As in a renderer whose Content-Security-Policy has no 'unsafe-eval': no code made from text.
    [
      "--disallow-code-generation-from-strings",
      HOST,
      dataDir(),
      PYTHON,
      "-m",
      "app_server",
      "--",
      PYTHON,
      join(FIXTURES, "fixture_server.py"),
    ],
    { cwd: ROOT, timeout: 120_000 },
  );
  assert.doesNotMatch(stderr, /client error/);
  const summary = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}");
  assert.equal(summary.server, "mcp-app-server");
  assert.deepEqual(summary.servers, ["fx", "spare"]);
  assert.deepEqual(summary.listedEnv, { FIXTURE_MODE: "***" });
  assert.equal(summary.spareStatus, "disabled");
  assert.equal(summary.started, "connected");
  assert.deepEqual(summary.startups.slice(0, 2), ["app:fx:starting", "app:fx:ready"]);
  assert.ok(summary.startups.includes("thread:fx:ready"));
  assert.ok(
    ["add", "ask", "echo", "progress", "sleep", "touch_resource"].every((tool) => summary.tools.includes(tool)),
  );
  assert.equal(summary.search, "mcp__fx__echo");
  assert.deepEqual(summary.selected, { data: ["mcp__fx__add"], missing: ["mcp__fx__nope"] });
  assert.deepEqual(summary.progress, [1, 2, 3]);
  assert.equal(summary.done, "done 3");
  assert.deepEqual(summary.asked, { action: "accept", content: { name: "Ada", age: 36 } });
  assert.deepEqual(summary.prompts, ["greet"]);
  assert.equal(summary.prompt, "Hello, Ada!");
  assert.equal(summary.preview.blobBytes, 256);
  assert.equal(summary.preview.hasBlob, false);
  assert.match(summary.preview.sha256, /^[0-9a-f]{64}$/);
  assert.equal(summary.updated, "fixture://static/hello");
  assert.deepEqual(summary.reasons, {
    unknownPrompt: "nope",
    inlineSecret: "Authorization",
    redactedValue: "config.env.NEW_KEY",
  });
  assert.deepEqual(summary.edited, { description: "edited by the host", revision: 2, env: "***" });
  assert.deepEqual(summary.remaining, ["fx"]);
});
