// The page's event hub (src/page/hub.ts, which needs no DOM) against the real client on the checkout's daemon:
// notifications reach their topic and `notification`, unsubscribing works, a second `attach` detaches the first
// client, and the client's close says `disconnected`.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { AppServerClient } from "mcp-app-server-client";
import type { ServerNotificationParamsByMethod } from "mcp-app-server-client";
import { EventHub } from "../src/page/hub.js";
import type { HubEvent, HubEvents } from "../src/page/hub.js";
import { DAEMON_COMMAND } from "./helpers.js";

const PYTHON = DAEMON_COMMAND[0] ?? "python3";
const ROOT = dirname(dirname(dirname(PYTHON)));
const FIXTURE = join(ROOT, "scripts", "smoke", "fixtures", "fixture_server.py");
const WAIT_MS = 20_000;
/** Every notification of the protocol: a new one fails this file's build until it is listed. */
const NOTIFICATIONS = {
  "mcp:resource_updated": true,
  "mcp:resources_updated": true,
  "mcp:tools_updated": true,
  "mcpServer/elicitation/completed": true,
  "mcpServer/oauthLogin/completed": true,
  "mcpServer/startupStatus/updated": true,
  "mcpServer/task/updated": true,
  "mcpServer/tool/progress": true,
  "serverRequest/resolved": true,
} as const satisfies Record<keyof ServerNotificationParamsByMethod, true>;
const cancel = () => ({ action: "cancel" as const });

const daemons: Array<{ readonly client: AppServerClient; readonly dataDir: string }> = [];

/** A client on a fresh daemon with its own data dir. */
async function startDaemon(): Promise<AppServerClient> {
  const dataDir = mkdtempSync(join(tmpdir(), "settings-hub-"));
  const client = await AppServerClient.spawn(PYTHON, DAEMON_COMMAND.slice(1), { dataDir, cwd: ROOT });
  daemons.push({ client, dataDir });
  return client;
}

/** Create the fixture server and start a thread on it. */
async function withThread(client: AppServerClient): Promise<string> {
  await client.request("mcpServer/create", { name: "fx", config: { command: PYTHON, args: [FIXTURE] } });
  const { thread } = await client.request("thread/start", { name: "hub", servers: ["fx"] });
  return thread.id;
}

function progress(client: AppServerClient, threadId: string): Promise<unknown> {
  const args = { steps: 3, delay_ms: 5 };
  return client.request("mcpServer/tool/call", { threadId, server: "fx", tool: "progress", arguments: args });
}

/** The next `event` of the hub that `match` accepts, within `WAIT_MS`. */
function next<E extends HubEvent>(
  hub: EventHub,
  event: E,
  match: (payload: HubEvents[E]) => boolean = () => true,
): Promise<HubEvents[E]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no ${event} within ${WAIT_MS} ms`));
    }, WAIT_MS);
    const off = hub.on(event, (payload) => {
      if (!match(payload)) return;
      clearTimeout(timer);
      off();
      resolve(payload);
    });
  });
}

let first: AppServerClient;
let second: AppServerClient;

before(async () => {
  [first, second] = await Promise.all([startDaemon(), startDaemon()]);
});

after(async () => {
  for (const daemon of daemons) {
    await daemon.client.close();
    rmSync(daemon.dataDir, { recursive: true, force: true });
  }
});

test("attach listens to every notification of the protocol and says connected", async () => {
  const hub = new EventHub();
  const listened = new Set<string>();
  const on = first.on.bind(first);
  const spied = Object.create(first) as AppServerClient;
  spied.on = ((event: Parameters<typeof on>[0], handler: Parameters<typeof on>[1]) => {
    listened.add(event);
    return on(event, handler);
  }) as typeof first.on;
  const connected = next(hub, "connected");
  hub.attach(spied, cancel);
  assert.equal(await connected, spied);
  for (const method of Object.keys(NOTIFICATIONS)) assert.ok(listened.has(method), `${method} is not forwarded`);
  hub.attach(second, cancel); // detaches the spied client's listeners
});

test("the daemon's notifications reach their topic and `notification`, in that order", async () => {
  const hub = new EventHub();
  hub.attach(first, cancel);
  const seen: string[] = [];
  hub.on("mcpServer/startupStatus/updated", (status) => seen.push(`topic ${status.name}`));
  hub.on("notification", (note) => {
    if (note.method === "mcpServer/startupStatus/updated") seen.push(`notification ${note.params.name}`);
  });
  const status = next(hub, "notification", (note) => note.method === "mcpServer/startupStatus/updated");
  const threadId = await withThread(first);
  await status;
  assert.deepEqual(seen.slice(0, 2), ["topic fx", "notification fx"]);

  const topic: number[] = [];
  const all: number[] = [];
  hub.on("mcpServer/tool/progress", (update) => topic.push(update.progress));
  hub.on("notification", (note) => {
    if (note.method === "mcpServer/tool/progress" && note.params.threadId === threadId) all.push(note.params.progress);
  });
  await progress(first, threadId);
  assert.equal(topic.length, 3);
  assert.deepEqual(all, topic);

  const task = next(hub, "mcpServer/task/updated", (update) => update.threadId === threadId);
  const call = { threadId, server: "fx", tool: "echo", arguments: { text: "hi" }, background: true as const };
  await first.request("mcpServer/tool/call", call);
  assert.equal((await task).threadId, threadId);
  hub.attach(second, cancel);
});

test("a listener that unsubscribes gets no more events; the others still do", async () => {
  const hub = new EventHub();
  hub.attach(first, cancel);
  const threadId = (await first.request("thread/start", { name: "hub", servers: ["fx"] })).thread.id;
  let once = 0;
  let kept = 0;
  const off = hub.on("mcpServer/tool/progress", () => {
    once += 1;
    off();
  });
  hub.on("mcpServer/tool/progress", () => {
    kept += 1;
  });
  await progress(first, threadId);
  assert.equal(once, 1);
  assert.equal(kept, 3);
  hub.attach(second, cancel);
});

test("attaching a second client detaches the first", async () => {
  const hub = new EventHub();
  const secondThread = await withThread(second);
  const firstThread = (await first.request("thread/start", { name: "hub", servers: ["fx"] })).thread.id;
  hub.attach(first, cancel);
  hub.attach(second, cancel);
  const threads: string[] = [];
  hub.on("mcpServer/tool/progress", (update) => threads.push(update.threadId));
  let direct = 0;
  const stop = first.on("mcpServer/tool/progress", () => {
    direct += 1;
  });
  await progress(first, firstThread);
  stop();
  assert.equal(direct, 3, "the first client itself still gets its notifications");
  assert.deepEqual(threads, [], "the hub no longer forwards the first client's");
  await progress(second, secondThread);
  assert.deepEqual(threads, [secondThread, secondThread, secondThread]);
});

test("the attached client's close says disconnected, and later events of it are not forwarded", async () => {
  const hub = new EventHub();
  const client = await startDaemon();
  hub.attach(client, cancel);
  const connectedAgain: unknown[] = [];
  hub.on("connected", (value) => connectedAgain.push(value));
  const disconnected = next(hub, "disconnected");
  await client.close();
  assert.equal(typeof (await disconnected), "string");
  assert.deepEqual(connectedAgain, []);
});
