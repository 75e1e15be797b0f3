// The MCP Apps sandbox of the host (SPEC §13): served on an origin of its own, framed only by the page, with a
// policy that allows exactly what the view declared (and nothing smuggled into a declared entry).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startHost } from "../src/host/host.js";
import type { Host } from "../src/host/host.js";
import { viewPolicy } from "../src/host/sandbox.js";
import { DAEMON_COMMAND, httpRequest } from "./helpers.js";

let host: Host;
let dataDir: string;

before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "settings-sandbox-"));
  host = await startHost({ daemonCommand: DAEMON_COMMAND, dataDir, log: () => {} });
});

after(async () => {
  await host.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const directive = (policy: string, name: string): string | undefined =>
  policy
    .split(";")
    .map((part) => part.trim())
    .find((part) => part.startsWith(`${name} `));

test("the sandbox is another origin, and the page may frame it and nothing else", async () => {
  const sandbox = new URL(host.sandboxOrigin);
  assert.equal(sandbox.hostname, "127.0.0.1");
  assert.notEqual(Number(sandbox.port), host.port);
  const page = await fetch(`http://127.0.0.1:${host.port}/`);
  const html = await page.text();
  assert.match(html, new RegExp(`<meta name="mcp-app-sandbox" content="${host.sandboxOrigin}"`));
  assert.equal(directive(page.headers.get("content-security-policy") ?? "", "frame-src"), `frame-src ${host.sandboxOrigin}`);
});

test("the view's policy names exactly its declared origins, framed only by the page", async () => {
  const csp = { connectDomains: ["https://api.example.test"], resourceDomains: ["https://cdn.example.test"] };
  const url = `${host.sandboxOrigin}/sandbox.html?host=${encodeURIComponent(`http://127.0.0.1:${host.port}`)}&csp=${encodeURIComponent(JSON.stringify(csp))}`;
  const answer = await fetch(url);
  assert.equal(answer.status, 200);
  const policy = answer.headers.get("content-security-policy") ?? "";
  assert.equal(directive(policy, "connect-src"), "connect-src 'self' https://api.example.test");
  assert.match(directive(policy, "img-src") ?? "", /https:\/\/cdn\.example\.test$/);
  assert.equal(directive(policy, "frame-src"), "frame-src 'none'");
  assert.equal(
    directive(policy, "frame-ancestors"),
    `frame-ancestors http://127.0.0.1:${host.port} http://localhost:${host.port}`,
  );
  assert.match(await answer.text(), /<script src="\/sandbox\.js" data-page-origins=/);
  const script = await fetch(`${host.sandboxOrigin}/sandbox.js`);
  assert.equal(script.status, 200);
  assert.match(script.headers.get("content-type") ?? "", /^text\/javascript/);
});

test("an entry that would add a source or a directive is dropped, not passed on", () => {
  const policy = viewPolicy(
    {
      connectDomains: [
        "https://ok.example.test",
        "https://a.test; script-src *",
        "'unsafe-hashes'",
        "https://b.test https://c.test",
        "javascript:alert(1)",
        "*",
      ],
    },
    ["http://127.0.0.1:1"],
  );
  assert.equal(directive(policy, "connect-src"), "connect-src 'self' https://ok.example.test");
  assert.equal(policy.split(";").filter((part) => part.trim().startsWith("script-src")).length, 1);
  assert.equal(directive(viewPolicy(undefined, ["http://127.0.0.1:1"]), "connect-src"), "connect-src 'self'");
});

test("the sandbox answers only its own Host, only GETs, and only its two files", async () => {
  const port = Number(new URL(host.sandboxOrigin).port);
  const rebound = await httpRequest(port, "GET", "/sandbox.html", { host: `evil.example.test:${port}` });
  assert.equal(rebound.status, 421);
  const posted = await httpRequest(port, "POST", "/sandbox.html", { host: `127.0.0.1:${port}` }, "x");
  assert.equal(posted.status, 405);
  const other = await httpRequest(port, "GET", "/", { host: `127.0.0.1:${port}` });
  assert.equal(other.status, 404);
  const garbled = await httpRequest(port, "GET", "/sandbox.html?csp=%7Bnot-json", { host: `127.0.0.1:${port}` });
  assert.equal(garbled.status, 400);
});
