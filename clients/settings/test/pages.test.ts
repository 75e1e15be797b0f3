// The page's frame policy (src/host/pages.ts) on a real HTTP server: the page is framed by nobody, frames only the
// MCP Apps sandbox's origin (never its path or token), runs only its own scripts, talks only to its own host, and is
// handed the sandbox's URL in its HTML alone; without a sandbox it frames nothing.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, test } from "node:test";
import { PageFiles, securityHeaders } from "../src/host/pages.js";
import { httpRequest } from "./helpers.js";

const SANDBOX = "http://127.0.0.1:43210/relay.html?token=0123456789abcdef";
const HTML = '<!doctype html><meta name="mcp-app-sandbox" content="%SANDBOX_URL%"><script src="/app.js"></script>';
const SCRIPT = 'console.log("%SANDBOX_URL%");';

let folder: string;
let server: Server;
let port: number;

before(async () => {
  folder = mkdtempSync(join(tmpdir(), "settings-pages-"));
  writeFileSync(join(folder, "index.html"), HTML);
  writeFileSync(join(folder, "app.js"), SCRIPT);
  writeFileSync(join(folder, "app.css"), "body{}");
  const files = new PageFiles(SANDBOX, pathToFileURL(`${folder}/`));
  server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://page").pathname;
    if (!files.serve(request, response, path)) {
      response.writeHead(404);
      response.end();
    }
  });
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  port = (server.address() as AddressInfo).port;
});

after(async () => {
  await new Promise<void>((closed) => server.close(() => closed()));
  rmSync(folder, { recursive: true, force: true });
});

/** Each directive of a Content-Security-Policy by name (a name given twice fails: the browser keeps the first). */
function directives(policy: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const part of policy.split(";").map((p) => p.trim()).filter(Boolean)) {
    const [name = "", ...values] = part.split(/\s+/);
    assert.equal(found.has(name), false, `${name} twice in ${policy}`);
    found.set(name, values.join(" "));
  }
  return found;
}

test("the page is framed by nobody and frames only the sandbox's origin, never its path or token", async () => {
  const page = await httpRequest(port, "GET", "/", { host: `127.0.0.1:${port}` });
  assert.equal(page.status, 200);
  const policy = directives(String(page.headers["content-security-policy"]));
  assert.equal(policy.get("frame-ancestors"), "'none'");
  assert.equal(policy.get("frame-src"), "http://127.0.0.1:43210");
  assert.equal(policy.get("default-src"), "'none'");
  assert.equal(policy.get("script-src"), "'self'");
  assert.equal(policy.get("connect-src"), `'self' ws://127.0.0.1:${port}`);
  assert.equal(policy.get("form-action"), "'none'");
  assert.equal(page.headers["x-content-type-options"], "nosniff");
  assert.equal(page.headers["cross-origin-opener-policy"], "same-origin");
});

test("the sandbox's URL is written into the page's HTML and nowhere else", async () => {
  const page = await httpRequest(port, "GET", "/", { host: `127.0.0.1:${port}` });
  assert.ok(page.body.includes(`content="${SANDBOX}"`), page.body);
  assert.equal(page.body.includes("%SANDBOX_URL%"), false);
  const script = await httpRequest(port, "GET", "/app.js", { host: `127.0.0.1:${port}` });
  assert.equal(script.body, SCRIPT);
  assert.match(String(script.headers["content-type"]), /^text\/javascript/);
  assert.equal(directives(String(script.headers["content-security-policy"])).get("frame-ancestors"), "'none'");
});

test("only the page's own files are served, and a HEAD gets their headers without a body", async () => {
  for (const path of ["/index.html", "/favicon.ico", "/app.js.map", "/APP.JS"]) {
    assert.equal((await httpRequest(port, "GET", path, { host: `127.0.0.1:${port}` })).status, 404, path);
  }
  const head = await httpRequest(port, "HEAD", "/app.css", { host: `127.0.0.1:${port}` });
  assert.equal(head.status, 200);
  assert.equal(head.body, "");
  assert.equal(head.headers["content-length"], "6");
});

test("without a sandbox the page frames nothing, and its socket is its own host's", () => {
  const policy = directives(securityHeaders("localhost:8080")["Content-Security-Policy"] ?? "");
  assert.equal(policy.get("frame-src"), "'none'");
  assert.equal(policy.get("frame-ancestors"), "'none'");
  assert.equal(policy.get("connect-src"), "'self' ws://localhost:8080");
});
