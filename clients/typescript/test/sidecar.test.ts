// The sidecar's lifecycle: close, a failed start, a crash (kill -9) with restart, where its stderr goes.
import assert from "node:assert/strict";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { test } from "node:test";
import { AppServerClient, isAppServerError } from "mcp-app-server-client";
import type { SidecarExit } from "mcp-app-server-client";
import { Trace, fixtureConfig, nextEvent, spawnDaemon, tempDir } from "./support.js";

test("close ends the sidecar with stdin EOF and resolves once it exited", async () => {
  const client = await spawnDaemon();
  const exits: SidecarExit[] = [];
  client.on("exit", (exit) => exits.push(exit));
  const pid = client.pid;
  assert.ok(pid !== undefined);
  await client.close();
  assert.deepEqual(
    exits.map((exit) => [exit.code, exit.expected, exit.restarting]),
    [[0, true, false]],
  );
  assert.throws(() => process.kill(pid, 0), { code: "ESRCH" });
  await assert.rejects(client.request("mcpServer/list"), (error: unknown) => isAppServerError(error, "connectionLost"));
});

test("a sidecar that dies before initialize rejects spawn with its exit and stderr tail", async () => {
  const script = "process.stderr.write('cannot open the data dir\\n'); process.exit(2)";
  await assert.rejects(AppServerClient.spawn(process.execPath, ["-e", script]), (error: unknown) => {
    assert.ok(isAppServerError(error, "connectionLost"));
    assert.match(error.message, /exit code 2/);
    assert.match(error.message, /cannot open the data dir/);
    return true;
  });
});

test("a crashed sidecar (kill -9): calls in flight reject connectionLost; it restarts, initialized", async () => {
  const trace = new Trace();
  const client = await spawnDaemon({ restart: { initialDelayMs: 50 }, trace: trace.record });
  await client.request("mcpServer/create", { name: "fx", config: fixtureConfig() });
  const { thread } = await client.request("thread/start", { servers: ["fx"] });
  const inFlight = client.request("mcpServer/tool/call", {
    threadId: thread.id,
    server: "fx",
    tool: "sleep",
    arguments: { ms: 60_000 },
  });
  await trace.find("out", (m) => m.method === "mcpServer/tool/call");
  const exit = nextEvent(client, "exit");
  const restarted = nextEvent(client, "restarted");
  const first = client.pid;
  assert.ok(first !== undefined);
  process.kill(first, "SIGKILL");

  await assert.rejects(inFlight, (error: unknown) => {
    assert.ok(isAppServerError(error, "connectionLost"));
    assert.equal(error.source, "client");
    assert.equal(error.method, "mcpServer/tool/call");
    return true;
  });
  const gone = await exit;
  assert.equal(gone.signal, "SIGKILL");
  assert.equal(gone.expected, false);
  assert.equal(gone.restarting, true);
  const waiting = client.request("mcpServer/list"); // made while the sidecar is down: waits for the new one
  const hello = await restarted;
  assert.equal(hello.serverInfo.name, "mcp-app-server");
  assert.notEqual(client.pid, first);
  assert.deepEqual(
    (await waiting).data.map((server) => server.name),
    ["fx"],
  );
  const initializes = trace.lines.filter((line) => line.direction === "out" && line.message.method === "initialize");
  assert.equal(initializes.length, 2);
  const closing = nextEvent(client, "exit");
  await client.close();
  assert.equal((await closing).expected, true);
});

test("stderr to a file with restart: each sidecar's log lines are appended there, and exit keeps the tail", async () => {
  const log = join(tempDir(), "daemon.log");
  writeFileSync(log, "kept from before\n");
  const client = await spawnDaemon({ stderr: log, restart: { initialDelayMs: 50 } });
  let second: number | undefined;
  const first = client.pid;
  try {
    await client.request("mcpServer/list"); // answered once the daemon is serving (initialize is answered earlier)
    const exit = nextEvent(client, "exit");
    const restarted = nextEvent(client, "restarted");
    assert.ok(first !== undefined);
    process.kill(first, "SIGTERM"); // it exits on its own, with its log flushed, and is started again
    const gone = await exit;
    assert.equal(gone.restarting, true);
    assert.match(gone.stderrTail, /"event": "stopped"/);
    await restarted;
    await client.request("mcpServer/list");
    second = client.pid;
  } finally {
    await client.close();
  }
  const lines = readFileSync(log, "utf8").split("\n");
  assert.equal(lines[0], "kept from before");
  const serving = lines.filter((line) => line.includes('"event": "serving"')).map((line) => JSON.parse(line).pid);
  assert.deepEqual(serving, [first, second]);
  const stopped = lines.filter((line) => line.includes('"event": "stopped"'));
  assert.equal(stopped.length, 2, "each sidecar's lines up to its exit");
  assert.equal(statSync(log).mode & 0o777, 0o644, "an existing file keeps its mode");
});

test("stderr to a stream the host owns: written to, never ended; a path that cannot be opened fails spawn", async () => {
  const chunks: Buffer[] = [];
  const stream = new PassThrough();
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  const client = await spawnDaemon({ stderr: stream });
  await client.close();
  assert.match(Buffer.concat(chunks).toString(), /"event": "serving"/);
  assert.equal(stream.writableEnded, false);

  const fresh = join(tempDir(), "new.log");
  await (await spawnDaemon({ stderr: fresh })).close();
  assert.equal(statSync(fresh).mode & 0o777, 0o600, "a new log file is the user's alone");
  await assert.rejects(spawnDaemon({ stderr: join(tempDir(), "missing", "daemon.log") }), { code: "ENOENT" });
});
