// The settings host's MCP Apps sandbox (SPEC §13), the client kit's `AppsSandbox`: the page frames only the relay's
// origin, the relay only the view's own origin (a port per view label, so one per server), each document framed
// only by the page (and the view by its relay too), the view's declared origins as its policy, and no request able
// to end the host.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startHost } from "../src/host/host.js";
import type { Host } from "../src/host/host.js";
import { DAEMON_COMMAND, httpRequest } from "./helpers.js";

let host: Host;
let dataDir: string;
let port: number;
let token: string;
const LABEL = `v${"ab".repeat(16)}`;

before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "settings-sandbox-"));
  host = await startHost({ daemonCommand: DAEMON_COMMAND, dataDir, log: () => {} });
  port = Number(new URL(host.sandboxOrigin).port);
  token = new URL(host.sandboxUrl).searchParams.get("token") ?? "";
});

after(async () => {
  await host.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const directive = (policy: string, name: string): string | undefined =>
  policy
    .split(";")
    .map((part: string) => part.trim())
    .find((part: string) => part.startsWith(`${name} `));

const pageOrigins = (): string => `http://127.0.0.1:${host.port} http://localhost:${host.port}`;

/** The relay document as the page asks for it. */
function relayPath(label = LABEL): string {
  return `/relay.html?${new URLSearchParams({ token, page: `http://127.0.0.1:${host.port}`, view: label, csp: "{}" })}`;
}

/** The view origin's port the relay names for `label` (its listener starts on the first relay of the label). */
async function viewPort(label = LABEL): Promise<number> {
  const relay = await httpRequest(port, "GET", relayPath(label), { host: `127.0.0.1:${port}` });
  const origin = /<meta name="view-origin" content="(http:\/\/127\.0\.0\.1:(\d+))">/.exec(relay.body);
  assert.ok(origin !== null, relay.body);
  return Number(origin[2]);
}

/** Hand a view's HTML over as the relay does (from the relay's origin); the id its document is served under. */
async function handOver(label = LABEL, origin = host.sandboxOrigin): Promise<{ status: number; id?: string }> {
  const answer = await httpRequest(
    port,
    "POST",
    `/views?${new URLSearchParams({ token, view: label })}`,
    { host: `127.0.0.1:${port}`, origin, "content-type": "text/plain" },
    "<!doctype html><p>a view</p>",
  );
  return answer.status === 200 ? { status: 200, id: (JSON.parse(answer.body) as { id: string }).id } : { status: answer.status };
}

/** A view document as its relay asks for it, on the view's own origin, for a view handed over just now. */
async function viewPath(csp: unknown): Promise<string> {
  const { id } = await handOver();
  const query = new URLSearchParams({ token, id: id ?? "", csp: typeof csp === "string" ? csp : JSON.stringify(csp) });
  return `/view.html?${query}`;
}

test("the page frames only the sandbox's relay origin, and is given the sandbox's URL", async () => {
  const sandbox = new URL(host.sandboxOrigin);
  assert.equal(sandbox.hostname, "127.0.0.1");
  assert.notEqual(Number(sandbox.port), host.port);
  assert.equal(new URL(host.sandboxUrl).origin, host.sandboxOrigin);
  assert.match(token, /^[0-9a-f]{48}$/);
  const page = await fetch(`http://127.0.0.1:${host.port}/`);
  const html = await page.text();
  assert.ok(html.includes(`<meta name="mcp-app-sandbox" content="${host.sandboxUrl}"`), html);
  assert.equal(directive(page.headers.get("content-security-policy") ?? "", "frame-src"), `frame-src ${host.sandboxOrigin}`);
});

test("the relay is framed only by the page and frames only the view's own origin, one per label", async () => {
  const answer = await httpRequest(port, "GET", relayPath(), { host: `127.0.0.1:${port}`, "sec-fetch-dest": "iframe" });
  assert.equal(answer.status, 200);
  const policy = String(answer.headers["content-security-policy"]);
  const mine = await viewPort();
  assert.equal(await viewPort(), mine);
  const other = await viewPort(`v${"cd".repeat(16)}`);
  assert.ok(new Set([port, host.port, mine, other]).size === 4, `${port} ${host.port} ${mine} ${other}`);
  assert.equal(directive(policy, "frame-ancestors"), `frame-ancestors ${pageOrigins()}`);
  assert.equal(directive(policy, "frame-src"), `frame-src http://127.0.0.1:${mine}`);
  assert.equal(directive(policy, "script-src"), "script-src 'self'");
  assert.match(answer.body, /<script type="module" src="\/apps\/relay\.js">/);
  const script = await httpRequest(port, "GET", "/apps/relay.js", { host: `127.0.0.1:${port}` });
  assert.equal(script.status, 200);
  assert.match(String(script.headers["content-type"]), /^text\/javascript/);
});

test("a view's policy names exactly its declared origins, in ASCII, framed by its relay and the page", async () => {
  const csp = {
    connectDomains: ["https://api.example.test", "http://127.0.0.1:9", "https://a.test; script-src *", "*"],
    resourceDomains: ["https://Bücher.example"],
  };
  const view = await viewPort();
  const answer = await httpRequest(view, "GET", await viewPath(csp), { host: `127.0.0.1:${view}` });
  assert.equal(answer.body, "<!doctype html><p>a view</p>");
  assert.equal(answer.status, 200);
  const policy = String(answer.headers["content-security-policy"]);
  assert.equal(directive(policy, "connect-src"), "connect-src 'self' https://api.example.test");
  assert.match(directive(policy, "img-src") ?? "", / https:\/\/xn--bcher-kva\.example$/);
  assert.equal(directive(policy, "frame-src"), "frame-src 'none'");
  assert.equal(directive(policy, "frame-ancestors"), `frame-ancestors ${host.sandboxOrigin} ${pageOrigins()}`);
  assert.equal(answer.headers["origin-agent-cluster"], "?1");
});

test("no domain a view declares can end the host: non-Latin-1, control characters, header breaks", async () => {
  const view = await viewPort();
  const hostile = ["https://例え.テスト", "https://ex\u0001ample.com", "https://a.com\r\nSet-Cookie: x=1", "https://\u0100.com", "https://é\u0000.com"];
  for (const entry of hostile) {
    const answer = await httpRequest(view, "GET", await viewPath({ connectDomains: [entry], frameDomains: [entry] }), {
      host: `127.0.0.1:${view}`,
    });
    assert.equal(answer.status, 200, entry);
    assert.doesNotMatch(String(answer.headers["content-security-policy"]), /[^\x20-\x7e]|set-cookie/i);
    assert.equal(answer.headers["set-cookie"], undefined);
  }
  const idn = await httpRequest(view, "GET", await viewPath({ connectDomains: ["https://例え.テスト"] }), {
    host: `127.0.0.1:${view}`,
  });
  assert.match(String(idn.headers["content-security-policy"]), /connect-src 'self' https:\/\/xn--r8jz45g\.xn--zckzah/);
  const alive = await fetch(`http://127.0.0.1:${host.port}/`);
  assert.equal(alive.status, 200);
  assert.equal(host.client.initializeResult?.serverInfo.name, "mcp-app-server");
});

test("the sandbox answers only its own places, only GETs, only with its token, only into frames", async () => {
  const relay = relayPath();
  const view = await viewPort();
  const cases: [number, string, string, Record<string, string>, number][] = [
    [port, "GET", relay, { host: `evil.example.test:${port}` }, 421],
    [port, "GET", relay, { host: `localhost:${port}` }, 421],
    [port, "POST", relay, { host: `127.0.0.1:${port}` }, 403],
    [port, "PUT", relay, { host: `127.0.0.1:${port}` }, 405],
    [view, "POST", relay, { host: `127.0.0.1:${view}` }, 405],
    [port, "GET", "/", { host: `127.0.0.1:${port}` }, 404],
    [port, "GET", relay.replace(token, "0".repeat(48)), { host: `127.0.0.1:${port}` }, 403],
    [port, "GET", relay, { host: `127.0.0.1:${port}`, "sec-fetch-dest": "image" }, 403],
    [port, "GET", relay.replace("csp=%7B%7D", "csp=%7Bnot-json"), { host: `127.0.0.1:${port}` }, 400],
    [port, "GET", relay.replace(LABEL, "nolabel"), { host: `127.0.0.1:${port}` }, 400],
    [port, "GET", await viewPath({}), { host: `127.0.0.1:${port}` }, 404],
    [view, "GET", relay, { host: `127.0.0.1:${view}` }, 404],
    [view, "GET", await viewPath({}), { host: `127.0.0.1:${port}` }, 421],
    [view, "GET", (await viewPath({})).replace(/id=[0-9a-f]+/, `id=${"0".repeat(32)}`), { host: `127.0.0.1:${view}` }, 404],
  ];
  // The hand-over: only from the relay's origin, with the token, for a view label; each view served once.
  assert.equal((await handOver(LABEL, "http://evil.example")).status, 403);
  assert.equal((await handOver(LABEL, `http://127.0.0.1:${host.port}`)).status, 403);
  assert.equal((await handOver("nolabel")).status, 400);
  const once = await viewPath({});
  assert.equal((await httpRequest(view, "GET", once, { host: `127.0.0.1:${view}` })).status, 200);
  assert.equal((await httpRequest(view, "GET", once, { host: `127.0.0.1:${view}` })).status, 404);
  for (const [to, method, path, headers, status] of cases) {
    const answer = await httpRequest(to, method, path, headers, method === "GET" ? undefined : "x");
    assert.equal(answer.status, status, `${method} ${path} ${JSON.stringify(headers)}`);
  }
});
