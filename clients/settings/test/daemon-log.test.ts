// The host keeps the daemon's log in the daemon's data dir, so why a server failed to start can be read afterwards.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { startHost } from "../src/host/host.js";
import { DAEMON_COMMAND } from "./helpers.js";

test("a failed start is in the daemon's log file, with its typed reason and detail", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "settings-log-"));
  const host = await startHost({ daemonCommand: DAEMON_COMMAND, dataDir, log: () => {} });
  try {
    assert.equal(host.daemonLogPath, join(dataDir, "settings-daemon.log"));
    const config = { type: "stdio", command: "/nonexistent/mcp-server", enabled: false } as const;
    await host.client.request("mcpServer/create", { name: "broken", config });
    await assert.rejects(host.client.request("mcpServer/start", { name: "broken" }));
  } finally {
    await host.close();
  }
  const path = join(dataDir, "settings-daemon.log");
  assert.equal(statSync(path).mode & 0o777, 0o600);
  const events = readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.ok(events.some((event) => event["event"] === "serving"), "the lines before initialize are kept");
  const failed = events.filter((event) => event["event"] === "server_failed" && event["server"] === "broken");
  assert.equal(failed.length, 1);
  assert.equal(failed[0]?.["level"], "warning");
  assert.equal(failed[0]?.["reason"], "startupFailed");
  assert.deepEqual((failed[0]?.["data"] as Record<string, unknown>)["detail"], "commandNotFound");
  rmSync(dataDir, { recursive: true, force: true });
});
