// The MCP Apps kit in Chromium (Debian's /usr/bin/chromium, `make chromium`; run apart from the other tests, without
// --disallow-code-generation-from-strings, which Playwright's own selector engine needs in Node): a renderer bundled with esbuild and no
// plugin (examples/renderer.ts) talks to the real daemon through a MessagePort the host relays to its stdio, and
// shows views through the kit's sandbox: one from the real npm App server (server-basic-vanillajs) whose own tool
// call goes through the daemon, and a hostile view that tries another server's localStorage, its relay's document
// and its sibling view, and reaches none of them.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { chromium } from "playwright-core";
import type { BrowserContext, Page } from "playwright-core";
import { AppServerClient } from "mcp-app-server-client";
import { AppsSandbox } from "mcp-app-server-client/apps-host";
import { FIXTURES, PYTHON, ROOT, WAIT_MS, dataDir } from "../support.js";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const VANILLA = join(ROOT, "node_modules", "@modelcontextprotocol", "server-basic-vanillajs", "dist", "index.js");
const RENDERER = fileURLToPath(new URL("../../../examples/renderer.ts", import.meta.url));
const PACKAGE = fileURLToPath(new URL("../../..", import.meta.url));
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing: run make chromium`;

/** `fn(arg)` in the page, sent as text (the function's source, then called), so nothing is compiled from text in
 * Node. */
function inPage<T>(target: Page, fn: (arg: never) => unknown, arg: unknown = null): Promise<T> {
  return target.evaluate(`(${fn.toString()})(${JSON.stringify(arg)})`) as Promise<T>;
}

let browser: BrowserContext | undefined;
let daemon: ChildProcess | undefined;
let pageServer: Server | undefined;
let sandbox: AppsSandbox | undefined;
let page: Page;

before(async () => {
  if (skip !== false) return;
  const data = dataDir();
  // The servers, configured as any host would; the renderer below gets its own daemon on the same data dir.
  const setup = await AppServerClient.spawn(PYTHON, ["-m", "app_server"], { dataDir: data, cwd: ROOT });
  await setup.request("mcpServer/create", { name: "vanilla", config: { command: process.execPath, args: [VANILLA, "--stdio"] } });
  for (const name of ["victim", "thief"]) {
    await setup.request("mcpServer/create", { name, config: { command: PYTHON, args: [join(FIXTURES, "hostile_view_server.py")] } });
  }
  await setup.close();

  // The renderer's bundle: esbuild for the browser, no plugin (the package's browser condition keeps Node out).
  const bundle = await build({
    entryPoints: [RENDERER],
    bundle: true,
    platform: "browser",
    format: "iife",
    globalName: "renderer",
    write: false,
    metafile: true,
    logLevel: "error",
  });
  const inputs = Object.keys(bundle.metafile.inputs);
  assert.ok(!inputs.some((input) => input.startsWith("node:") || /\/sidecar\.js$/.test(input)), inputs.join("\n"));
  const script = bundle.outputFiles[0]?.contents ?? new Uint8Array();
  const readme = await readmeBundle();
  const html =
    '<!doctype html><meta charset="utf-8"><title>host page</title><div id="views"></div>' +
    '<script src="/renderer.js"></script><script src="/readme.js"></script>';
  pageServer = createServer((request, response) => {
    const js = request.url === "/renderer.js" ? script : request.url === "/readme.js" ? readme : undefined;
    response.writeHead(200, { "Content-Type": js !== undefined ? "text/javascript" : "text/html" });
    response.end(js ?? html);
  });
  await new Promise<void>((resolve) => pageServer?.listen(0, "127.0.0.1", resolve));
  const pageOrigin = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`;
  sandbox = await AppsSandbox.start({ pageOrigins: [pageOrigin] });

  // A profile as a person's browser has one (an incognito context blocks every cross-site frame's storage).
  browser = await chromium.launchPersistentContext(join(data, "chromium-profile"), {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run"],
  });
  page = await browser.newPage();
  // The host's IPC: the renderer's MessagePort on one side, the sidecar's stdio on the other, a message per line.
  const child = spawn(PYTHON, ["-m", "app_server", "--data-dir", data], { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"] });
  daemon = child;
  await page.exposeFunction("hostSend", (message: unknown) => {
    if (typeof message === "string") child.stdin?.write(`${message}\n`);
    else child.stdin?.end();
  });
  let delivered = Promise.resolve();
  createInterface({ input: child.stdout! }).on("line", (line) => {
    delivered = delivered.then(() => inPage(page, (text: string) => (window as unknown as Relay).hostReceive(text), line));
  });
  await page.goto(pageOrigin);
  await inPage(page, async () => {
    const channel = new MessageChannel();
    const global = window as unknown as Relay & { renderer: Renderer; client: unknown; hostSend(message: unknown): void };
    channel.port2.onmessage = (event) => global.hostSend(event.data);
    global.hostReceive = (line) => channel.port2.postMessage(line);
    global.client = await global.renderer.connect(channel.port1);
  });
});

after(async () => {
  await browser?.close();
  daemon?.stdin?.end();
  if (daemon !== undefined && daemon.exitCode === null) await new Promise((resolve) => daemon?.once("exit", resolve));
  await sandbox?.close();
  pageServer?.close();
});

/** The renderer's lines of the README's MCP Apps block, as written, in a function given what they leave to the host
 * (its client, thread, tool, arguments, container and sandbox URL), bundled with esbuild for the browser. */
async function readmeBundle(): Promise<Uint8Array> {
  const readme = readFileSync(join(PACKAGE, "README.md"), "utf8");
  const block = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? "").find((text) => text.includes("mountAppView("));
  assert.ok(block !== undefined, "the README has no MCP Apps block");
  const lines = block.slice(block.indexOf("// The renderer")).split("\n").filter((line) => line.trim() !== "" && !line.startsWith("//"));
  const imports = lines.filter((line) => line.startsWith("import "));
  const code = lines.filter((line) => !line.startsWith("import "));
  assert.ok(code.length <= 3, code.join("\n"));
  const contents = [
    ...imports,
    "export async function showView(client, threadId, tool, args, container, sandboxUrl) {",
    ...code,
    "  return view;",
    "}",
  ].join("\n");
  const built = await build({
    stdin: { contents, resolveDir: PACKAGE, loader: "ts", sourcefile: "readme-view.ts" },
    bundle: true,
    platform: "browser",
    format: "iife",
    globalName: "readme",
    write: false,
    logLevel: "error",
  });
  return built.outputFiles[0]?.contents ?? new Uint8Array();
}

interface Relay {
  hostReceive(line: string): void;
}
interface Renderer {
  connect(port: MessagePort): Promise<unknown>;
  showView(...args: unknown[]): Promise<{ frame: HTMLIFrameElement }>;
}

/** Show `server`'s view of `tool` in a container of its own (`data-view=<server>`). */
async function show(server: string, tool: string): Promise<void> {
  await inPage(
    page,
    async ({ server, tool, sandbox }: { server: string; tool: string; sandbox: string }) => {
      const global = window as unknown as { renderer: Renderer; client: unknown };
      const container = document.createElement("section");
      container.dataset["view"] = server;
      document.getElementById("views")?.append(container);
      await global.renderer.showView(global.client, sandbox, container, server, tool, {});
    },
    { server, tool, sandbox: sandbox?.url ?? "" },
  );
}

const view = (server: string) => page.frameLocator(`[data-view="${server}"] iframe.mcp-app-view`).frameLocator("iframe");

/** `expression`'s value in `server`'s view document (the frame inside its relay). */
async function inView(server: string, expression: string): Promise<unknown> {
  const relay = await (await page.locator(`[data-view="${server}"] iframe.mcp-app-view`).elementHandle())?.contentFrame();
  const frame = relay?.childFrames()[0];
  assert.ok(frame !== undefined, `${server}'s view has no frame`);
  return frame.evaluate(expression);
}

test("a real npm App server's view renders with the kit, on its own origin, and calls its tool", { skip }, async () => {
  await show("vanilla", "get-time");
  const time = view("vanilla").locator("#server-time");
  const before = (await time.textContent({ timeout: WAIT_MS })) ?? "";
  await view("vanilla").getByRole("button", { name: "Get Server Time" }).click({ timeout: WAIT_MS });
  await time.filter({ hasNotText: before }).waitFor({ timeout: WAIT_MS });
  assert.match((await time.textContent()) ?? "", /\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}/);
  const origin = String(await inView("vanilla", "location.origin"));
  assert.match(origin, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.notEqual(origin, new URL(sandbox?.url ?? "").origin);
  assert.notEqual(origin, new URL(page.url()).origin);
});

test("a view's link opens only after a click in the page, naming the URL and the server, one at a time", { skip }, async () => {
  const asks = page.locator('[data-view="vanilla"] [data-role="app-view-link"]');
  const pages = page.context().pages().length;
  await view("vanilla").getByRole("button", { name: "Open Link" }).click({ timeout: WAIT_MS });
  await asks.waitFor({ timeout: WAIT_MS });
  await view("vanilla").getByRole("button", { name: "Open Link" }).click({ timeout: WAIT_MS });
  const text = (await asks.textContent()) ?? "";
  assert.match(text, /^vanilla's view asks to open https?:\/\//);
  assert.equal(await asks.count(), 1, "a second link was asked for while one was pending");
  assert.equal(page.context().pages().length, pages, "a link opened without a click");
  await asks.getByRole("button", { name: "Dismiss" }).click();
  await asks.waitFor({ state: "detached", timeout: WAIT_MS });
  assert.equal(page.context().pages().length, pages);
});

test("a hostile view reaches no other server's storage, nor its relay, nor a sibling view", { skip }, async () => {
  await show("victim", "open_hostile");
  const victim = JSON.parse((await view("victim").locator("#report").filter({ hasText: "{" }).textContent({ timeout: WAIT_MS })) ?? "");
  await show("thief", "open_hostile");
  const thief = JSON.parse((await view("thief").locator("#report").filter({ hasText: "{" }).textContent({ timeout: WAIT_MS })) ?? "");
  assert.notEqual(thief.host, victim.host);
  assert.equal(thief.found, null, `the thief's storage held ${thief.found}`);
  assert.match(thief.relay, /^blocked: SecurityError/);
  assert.ok(thief.siblings.length >= 2, JSON.stringify(thief.siblings));
  for (const sibling of thief.siblings) assert.match(sibling, /^blocked: SecurityError/);
  const stash = await inView("victim", 'localStorage.getItem("stash")');
  assert.equal(stash, victim.host);
});

test("the README's MCP Apps lines, as written, show a real App server's view", { skip }, async () => {
  await inPage(
    page,
    async ({ sandbox }: { sandbox: string }) => {
      type Client = { request(method: string, params: unknown): Promise<any> };
      const global = window as unknown as {
        client: Client;
        readme: { showView(...args: unknown[]): Promise<unknown> };
      };
      const { thread } = await global.client.request("thread/start", { servers: ["vanilla"] });
      const { data } = await global.client.request("mcpTool/listForContext", { threadId: thread.id });
      const tool = data.find((entry: { tool: string }) => entry.tool === "get-time");
      const container = document.createElement("section");
      container.dataset["view"] = "readme";
      document.getElementById("views")?.append(container);
      await global.readme.showView(global.client, thread.id, tool, {}, container, sandbox);
    },
    { sandbox: sandbox?.url ?? "" },
  );
  const time = view("readme").locator("#server-time");
  const before = (await time.textContent({ timeout: WAIT_MS })) ?? "";
  await view("readme").getByRole("button", { name: "Get Server Time" }).click({ timeout: WAIT_MS });
  await time.filter({ hasNotText: before }).waitFor({ timeout: WAIT_MS });
  assert.match((await time.textContent()) ?? "", /\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}/);
});
