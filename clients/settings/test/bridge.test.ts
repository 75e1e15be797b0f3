// The host's bridge against the real daemon (spawned from the checkout): who is let in (token, Origin, Host), that
// each page WebSocket is a daemon connection of its own, and the host's browser call.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { WebSocket } from "ws";
import { CLOSE } from "../src/host/bridge.js";
import { OPEN_PATH, TOKEN_HEADER, startHost } from "../src/host/host.js";
import type { Host } from "../src/host/host.js";
import { DAEMON_COMMAND, httpRequest, waitFor } from "./helpers.js";

let host: Host;
let dataDir: string;
const opened: string[] = [];

before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "settings-bridge-"));
  host = await startHost({
    daemonCommand: DAEMON_COMMAND,
    dataDir,
    log: () => {},
    openExternal: (url) => {
      opened.push(url);
    },
  });
});

after(async () => {
  await host.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const origin = (): string => `http://127.0.0.1:${host.port}`;

/** Open a bridge WebSocket; resolves with it once open, or rejects with the HTTP status of the refusal. */
function openBridge(options: { token?: string; origin?: string; host?: string } = {}): Promise<WebSocket> {
  const token = options.token ?? host.token;
  const socket = new WebSocket(`ws://127.0.0.1:${host.port}/bridge?token=${encodeURIComponent(token)}`, {
    headers: {
      ...(options.origin === "" ? {} : { Origin: options.origin ?? origin() }),
      ...(options.host === undefined ? {} : { Host: options.host }),
    },
  });
  return new Promise((resolveOpen, reject) => {
    socket.once("open", () => resolveOpen(socket));
    socket.once("unexpected-response", (_request, response) => reject(new Error(`HTTP ${response.statusCode}`)));
    socket.once("error", reject);
  });
}

/** Send one JSON-RPC request and wait for the message answering it. */
function call(socket: WebSocket, id: number, method: string, params: unknown): Promise<{ [key: string]: unknown }> {
  return new Promise((resolveAnswer) => {
    const onMessage = (data: Buffer): void => {
      const message = JSON.parse(data.toString()) as { [key: string]: unknown };
      if (message.id !== id) return;
      socket.off("message", onMessage);
      resolveAnswer(message);
    };
    socket.on("message", onMessage);
    socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
  });
}

const initialize = (socket: WebSocket, id: number) =>
  call(socket, id, "initialize", { clientInfo: { name: "bridge-test", version: "0" } });

test("a WebSocket without the run's token is refused before reaching the daemon", async () => {
  await assert.rejects(openBridge({ token: "" }), /HTTP 403/);
  const wrong = `${host.token.slice(0, -1)}${host.token.endsWith("0") ? "1" : "0"}`;
  await assert.rejects(openBridge({ token: wrong }), /HTTP 403/);
  await assert.rejects(openBridge({ token: host.token.slice(0, 32) }), /HTTP 403/);
  assert.equal(host.pages(), 0);
});

test("a WebSocket from another origin, or with no Origin, is refused even with the token", async () => {
  await assert.rejects(openBridge({ origin: "http://evil.example" }), /HTTP 403/);
  await assert.rejects(openBridge({ origin: `http://127.0.0.1:${host.port + 1}` }), /HTTP 403/);
  await assert.rejects(openBridge({ origin: "" }), /HTTP 403/);
  assert.equal(host.pages(), 0);
});

test("a request naming another host (DNS rebinding) is refused", async () => {
  await assert.rejects(openBridge({ host: `evil.example:${host.port}`, origin: `http://evil.example:${host.port}` }), /HTTP 421/);
  const answer = await httpRequest(host.port, "GET", "/", { Host: "evil.example" });
  assert.equal(answer.status, 421);
});

test("each page WebSocket is its own daemon connection, initialized by the page", async () => {
  const first = await openBridge();
  const second = await openBridge();
  try {
    assert.equal(host.pages(), 2);
    const one = await initialize(first, 1);
    const two = await initialize(second, 1);
    // A shared connection would answer the second initialize with alreadyInitialized.
    assert.ok("result" in one, JSON.stringify(one));
    assert.ok("result" in two, JSON.stringify(two));
    const again = (await initialize(first, 2)) as { error?: { data?: { reason?: string } } };
    assert.equal(again.error?.data?.reason, "alreadyInitialized");
    const listed = (await call(second, 2, "mcpServer/list", {})) as { result?: { data?: unknown[] } };
    assert.deepEqual(listed.result?.data, []);
  } finally {
    first.close();
    second.close();
  }
  await waitFor(() => host.pages() === 0);
});

test("a frame that is not one text message closes the page's connection", async () => {
  const socket = await openBridge();
  const closed = new Promise<number>((resolveClose) => socket.once("close", (code) => resolveClose(code)));
  socket.send(`${JSON.stringify({ id: 1, method: "initialize" })}\n${JSON.stringify({ id: 2, method: "x" })}`);
  assert.equal(await closed, CLOSE.unsupportedData);
  await waitFor(() => host.pages() === 0);
});

test("the host opens only http(s) URLs, and only for the page", async () => {
  const post = async (body: string, headers: Record<string, string>): Promise<number> =>
    (await httpRequest(host.port, "POST", OPEN_PATH, headers, body)).status;
  const page = { Origin: origin(), [TOKEN_HEADER]: host.token, "Content-Type": "application/json" };
  assert.equal(await post(JSON.stringify({ url: "https://login.example/authorize?x=1" }), page), 204);
  assert.equal(await post(JSON.stringify({ url: "file:///etc/passwd" }), page), 400);
  assert.equal(await post(JSON.stringify({ url: "javascript:alert(1)" }), page), 400);
  assert.equal(await post(JSON.stringify({ url: "https://a.example" }), { ...page, [TOKEN_HEADER]: "wrong" }), 403);
  assert.equal(await post(JSON.stringify({ url: "https://a.example" }), { ...page, Origin: "http://evil.example" }), 403);
  assert.deepEqual(opened, ["https://login.example/authorize?x=1"]);
});

/** Bytes no browser would send, on a socket of their own; the status line the host answered, or "" for none. */
function rawRequest(port: number, text: string, reset: boolean): Promise<string> {
  return new Promise((resolveAnswer) => {
    const socket = connect(port, "127.0.0.1", () => {
      socket.write(text);
      if (reset) socket.resetAndDestroy();
    });
    let answer = "";
    socket.on("data", (chunk: Buffer) => (answer += chunk.toString("latin1")));
    socket.on("close", () => resolveAnswer(answer.split("\r\n")[0] ?? ""));
    socket.on("error", () => {});
  });
}

test("no upgrade request can end the host: a target no URL parser takes, a peer that resets mid-answer", async () => {
  const upgrade = "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n";
  const hostLine = `Host: 127.0.0.1:${host.port}\r\n`;
  for (const target of ["http://[", "//[::1", "/bridge?token=x"]) {
    for (const reset of [false, true]) {
      const status = await rawRequest(host.port, `GET ${target} HTTP/1.1\r\n${hostLine}${upgrade}\r\n`, reset);
      if (!reset) assert.doesNotMatch(status, /^HTTP\/1\.1 [12]/, target);
    }
  }
  const page = await fetch(`${origin()}/`);
  assert.equal(page.status, 200);
  const socket = await openBridge();
  const answer = await call(socket, 1, "initialize", { clientInfo: { name: "after", version: "1" } });
  assert.ok("result" in answer, JSON.stringify(answer));
  socket.close();
});
