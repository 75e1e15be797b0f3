// A renderer's transport: the client over one end of a MessageChannel, the host relaying the other end to the real
// daemon's stdio a message per line (as an Electron main process does with a renderer's MessagePort).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { MessageChannel } from "node:worker_threads";
import { AppServerClient, PORT_CLOSED, messagePortTransport } from "mcp-app-server-client";
import { PYTHON, ROOT, dataDir } from "./support.js";

test("the client talks to the daemon through a MessagePort its host relays, and closing ends the daemon", async () => {
  const daemon = spawn(PYTHON, ["-m", "app_server", "--data-dir", dataDir()], { cwd: ROOT, stdio: ["pipe", "pipe", "ignore"] });
  const exited = new Promise<number | null>((resolve) => daemon.once("exit", resolve));
  const { port1, port2 } = new MessageChannel();
  port2.on("message", (message: unknown) => {
    if (typeof message === "string") daemon.stdin.write(`${message}\n`);
    else if ((message as { type?: unknown } | null)?.type === PORT_CLOSED.type) daemon.stdin.end();
  });
  createInterface({ input: daemon.stdout }).on("line", (line) => port2.postMessage(line));
  // Node's MessagePort is an EventTarget too, as a browser's is.
  const client = new AppServerClient(messagePortTransport(port1 as unknown as MessagePort));
  const answer = await client.initialize({ name: "port-test", version: "1.0.0" });
  assert.equal(answer.serverInfo.name, "mcp-app-server");
  const servers = await client.request("mcpServer/list", {});
  assert.deepEqual(servers.data, []);
  await client.close();
  assert.equal(await exited, 0);
  port2.close();
});
