// `make gui-smoke`: the settings page driven in headless Chromium (Debian's, through playwright-core) against the real
// daemon and the fixture MCP servers, as a person would use it. Prints a pass/fail table like the main smoke and
// saves a screenshot of each view under the output folder.
//
//   node gui-smoke.js [--out build/gui-smoke] [--chromium /usr/bin/chromium] [--python .venv/bin/python]
//                     [--daemon-command '["…/python","-m","app_server"]']
import { spawn, spawnSync } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import type { BrowserContext, FrameLocator, Locator, Page } from "playwright-core";
import { startHost } from "../src/host/host.js";
import type { Host } from "../src/host/host.js";

const ROOT = resolve(new URL("../../../../", import.meta.url).pathname);
const FIXTURES = join(ROOT, "scripts", "smoke", "fixtures");
/** npm server-everything (a workspace dependency at the root). */
const EVERYTHING = join(ROOT, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js");
/** npm server-basic-vanillajs, ext-apps' own example App server (a root dependency), run with `--stdio`. */
const VANILLA = join(ROOT, "node_modules", "@modelcontextprotocol", "server-basic-vanillajs", "dist", "index.js");
/** npm server-pdf, the official PDF App server (a root dependency): its view is over 4 MiB of HTML with PDF.js. */
const PDF_SERVER = join(ROOT, "node_modules", "@modelcontextprotocol", "server-pdf", "dist", "index.js");
const CHROMIUM_FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
/** The DOM must stay far below the payloads it previews (2 MiB of text, a 1 MiB image: 1.4 MB of base64). */
const DOM_LIMIT_CHARS = 256 * 1024;
const STEP_TIMEOUT_MS = 30_000;

interface Outcome {
  readonly area: string;
  readonly check: string;
  readonly ok: boolean;
  readonly detail: string;
  readonly seconds: number;
}

class Report {
  readonly outcomes: Outcome[] = [];

  async check(area: string, check: string, body: () => Promise<string>): Promise<boolean> {
    const started = performance.now();
    let ok = true;
    let detail: string;
    try {
      detail = await body();
    } catch (error) {
      ok = false;
      detail = (error instanceof Error ? `${error.name}: ${error.message}` : String(error)).split("\n")[0] ?? "";
    }
    this.outcomes.push({ area, check, ok, detail: detail.slice(0, 160), seconds: (performance.now() - started) / 1000 });
    return ok;
  }

  print(screenshots: readonly string[], out: string): number {
    const width = Math.max(...this.outcomes.map((o) => o.check.length));
    const lines = [`\n${"area".padEnd(10)} ${"check".padEnd(width)}  result  ${"time".padStart(6)}  detail`, "-".repeat(width + 60)];
    for (const o of this.outcomes) {
      lines.push(
        `${o.area.padEnd(10)} ${o.check.padEnd(width)}  ${(o.ok ? "PASS" : "FAIL").padEnd(6)}  ${o.seconds.toFixed(2).padStart(5)}s  ${o.detail}`,
      );
    }
    const failed = this.outcomes.filter((o) => !o.ok).length;
    lines.push(`\nscreenshots in ${out}: ${screenshots.join(", ")}`);
    lines.push(`\n${this.outcomes.length - failed} passed, ${failed} failed`);
    process.stdout.write(`${lines.join("\n")}\n`);
    return failed === 0 ? 0 : 1;
  }
}

function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/** Start an HTTP fixture script and wait (bounded) for its one `READY <url>` line. */
async function announced(python: string, script: string, args: string[] = []): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(python, [join(FIXTURES, script), ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2000);
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} not READY in 20 s: ${stderr}`)), 20_000);
    lines.once("line", (line) => {
      clearTimeout(timer);
      if (line.startsWith("READY ")) resolveUrl(line.slice("READY ".length));
      else reject(new Error(`${script} printed ${line}`));
    });
    child.once("exit", (code) => reject(new Error(`${script} exited (${code}): ${stderr}`)));
  });
  return { url, child };
}

/** A one-page PDF that draws `text` in Helvetica: a local file for the PDF server, so no network is needed. */
function onePagePdf(text: string): Buffer {
  const drawing = `BT /F1 24 Tf 36 60 Td (${text}) Tj ET`;
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 420 144] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
    `<< /Length ${drawing.length} >>\nstream\n${drawing}\nendstream`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
  ];
  let body = "%PDF-1.4\n";
  const offsets: number[] = [];
  objects.forEach((object, index) => {
    offsets.push(body.length);
    body += `${index + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  body += offsets.map((offset) => `${String(offset).padStart(10, "0")} 00000 n \n`).join("");
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, "latin1");
}

/** A fake home with app configs, so import and sync never touch the real ones. */
function fakeHome(base: string): { env: Record<string, string>; codexConfig: string } {
  const home = join(base, "home");
  mkdirSync(join(home, ".codex"), { recursive: true });
  mkdirSync(join(home, ".cursor"), { recursive: true });
  const codexConfig = join(home, ".codex", "config.toml");
  writeFileSync(codexConfig, '# mine\nmodel = "o4"\n\n[mcp_servers.mine]\ncommand = "my-tool"\n');
  writeFileSync(join(home, ".cursor", "mcp.json"), JSON.stringify({ mcpServers: { cur: { command: "cursor-tool" } } }));
  return {
    env: { HOME: home, CODEX_HOME: join(home, ".codex"), XDG_CONFIG_HOME: join(home, ".config") },
    codexConfig,
  };
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      out: { type: "string", default: join(ROOT, "build", "gui-smoke") },
      chromium: { type: "string", default: "/usr/bin/chromium" },
      python: { type: "string", default: join(ROOT, ".venv", "bin", "python") },
      "daemon-command": { type: "string" },
    },
  });
  const out = resolve(values.out);
  const python = resolve(values.python);
  const daemonCommand = values["daemon-command"] === undefined ? [python, "-m", "app_server"] : (JSON.parse(values["daemon-command"]) as string[]);
  if (!existsSync(values.chromium)) {
    process.stderr.write(`${values.chromium} is missing: run \`make chromium\` (Debian's chromium package)\n`);
    return 2;
  }
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const base = mkdtempSync(join(tmpdir(), "mcp-gui-smoke-"));
  const { env, codexConfig } = fakeHome(base);
  const secret = `gui-secret-${randomBytes(12).toString("hex")}`;
  const report = new Report();
  const screenshots: string[] = [];
  const children: ChildProcess[] = [];
  let context: BrowserContext | undefined;
  let host: Host | undefined;
  let largestDom = 0;

  try {
    const oauth = await announced(python, "oauth_server.py");
    children.push(oauth.child);
    const registry = await announced(python, "registry_server.py");
    children.push(registry.child);
    context = await chromium.launchPersistentContext(join(base, "chromium-profile"), {
      executablePath: values.chromium,
      headless: true,
      args: CHROMIUM_FLAGS,
      viewport: { width: 1280, height: 900 },
    });
    const browser = context;
    host = await startHost({
      daemonCommand: [...daemonCommand, "--registry-url", registry.url],
      dataDir: join(base, "data"),
      env,
      log: (line) => process.stderr.write(`host: ${line}\n`),
      // The system browser, as the smoke's driver: follow the authorization URL like a browser would.
      openExternal: async (url) => {
        const tab = await browser.newPage();
        await tab.goto(url);
        await tab.waitForLoadState("load");
        await shot(tab, "oauth-callback");
        await tab.close();
      },
    });
    const page = await context.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT_MS);
    const pageErrors: string[] = [];
    page.on("pageerror", (error) => pageErrors.push(error.message));

    async function shot(target: Page, name: string): Promise<void> {
      const file = `${name}.png`;
      await target.screenshot({ path: join(out, file), fullPage: true });
      screenshots.push(file);
    }
    async function domSize(): Promise<number> {
      const size = await page.evaluate(() => document.documentElement.outerHTML.length);
      largestDom = Math.max(largestDom, size);
      return size;
    }
    async function domHasSecret(): Promise<boolean> {
      return page.evaluate((value) => document.documentElement.outerHTML.includes(value), secret);
    }
    const row = (name: string): Locator => page.locator(`tr[data-server="${name}"]`);
    const tab = async (name: string): Promise<void> => {
      await page.locator(`[role="tab"][data-tab="${name}"]`).click();
    };
    /** Tick exactly `names` among the Thread tab's servers (every enabled server starts ticked). */
    const chooseThreadServers = async (names: readonly string[]): Promise<void> => {
      for (const box of await page.locator('[data-role="thread-servers"] input[type="checkbox"]').all()) {
        await box.setChecked(names.includes(await box.inputValue()));
      }
    };
    const fillServerForm = async (fields: {
      name?: string;
      command?: string;
      args?: string[];
      env?: Record<string, string>;
      url?: string;
      oauth?: boolean;
      description?: string;
    }): Promise<Locator> => {
      const form = page.locator("form.server-form");
      if (fields.name !== undefined) await form.getByLabel("Name", { exact: true }).fill(fields.name);
      if (fields.url !== undefined) {
        await form.getByLabel("http (a URL)").check();
        await form.getByLabel("URL", { exact: true }).fill(fields.url);
        if (fields.oauth) await form.getByLabel("Log in with OAuth").check();
      }
      if (fields.command !== undefined) await form.getByLabel("Command", { exact: true }).fill(fields.command);
      if (fields.args !== undefined) await form.getByLabel("Arguments", { exact: true }).fill(fields.args.join("\n"));
      for (const [key, value] of Object.entries(fields.env ?? {})) {
        await form.getByRole("button", { name: "Add variable" }).click();
        await form.getByLabel("Variable (Environment)").last().fill(key);
        await form.getByLabel("Value (Environment)").last().fill(value);
      }
      if (fields.description !== undefined) await form.getByLabel("Description", { exact: true }).fill(fields.description);
      return form;
    };
    const addServer = async (fields: Parameters<typeof fillServerForm>[0], screenshot?: string): Promise<void> => {
      await tab("servers");
      await page.getByRole("button", { name: "Add server" }).click();
      const form = await fillServerForm(fields);
      if (screenshot !== undefined) await shot(page, screenshot);
      await form.getByRole("button", { name: "Add", exact: true }).click();
      await row(fields.name ?? "").waitFor();
    };
    const callTool = async (tool: string, args: unknown): Promise<void> => {
      await tab("thread");
      await page.getByLabel("Tool", { exact: true }).selectOption(tool);
      await page.getByLabel("Arguments (JSON)").fill(JSON.stringify(args));
      await page.getByRole("button", { name: "Call tool" }).click();
    };
    const resultText = async (): Promise<string> => {
      const result = page.locator('[data-role="tool-result"], [data-role="call-error"]').first();
      await result.waitFor();
      return (await result.textContent()) ?? "";
    };

    await report.check("page", "loads with a one-time code", async () => {
      // As `--open` does: the browser gets /#code=…, which the page trades once for the session token.
      const url = host?.oneTimeUrl() ?? "";
      await page.goto(url);
      await page.locator('[data-connection="ready"]').waitFor();
      assert(!page.url().includes("code=") && !page.url().includes("token="), "the code stayed in the address bar");
      assert((host?.pages() ?? 0) === 1, `the host relays ${host?.pages()} page connections`);
      await shot(page, "servers-empty");
      const again = await browser.newPage();
      await again.goto(url);
      const problem = (await again.locator('[data-role="session-problem"]').textContent()) ?? "";
      assert(problem.includes("already used or has expired"), `a reused code said: ${problem}`);
      await shot(again, "one-time-code-reused-refused");
      await again.close();
      assert((host?.pages() ?? 0) === 1, "the reused code got a connection");
      return "the code was traded once (address bar cleaned); the same URL again is refused with a sentence, no connection";
    });

    await report.check("servers", "name rule checked in the form", async () => {
      await tab("servers");
      await page.getByRole("button", { name: "Add server" }).click();
      const form = page.locator("form.server-form");
      const name = form.getByLabel("Name", { exact: true });
      const error = form.locator('[data-role="name-error"]');
      const said: string[] = [];
      for (const [typed, expected] of [
        ["x".repeat(25), "At most 24 characters"],
        ["bad name!", "Only letters, digits, - and _"],
        ["my__server", "Never two _ in a row"],
      ] as const) {
        await name.fill(typed);
        const text = (await error.textContent()) ?? "";
        assert(text.includes(expected), `${typed}: the form said ${text}`);
        said.push(text.split(" (")[0] ?? text);
      }
      await form.getByLabel("Command", { exact: true }).fill(python);
      await form.getByRole("button", { name: "Add", exact: true }).click();
      assert((await name.getAttribute("aria-invalid")) === "true", "the name is not marked invalid");
      await shot(page, "server-form-name-rule");
      const stored = await host?.client.request("mcpServer/list", {});
      assert(stored?.data.length === 0, `the form sent the server: ${JSON.stringify(stored?.data.map((s) => s.name))}`);
      await name.fill("my_server");
      assert(((await error.textContent()) ?? "") === "", "a valid name is still refused");
      await form.getByRole("button", { name: "Cancel" }).click();
      return `said while typing: ${said.join(" / ")}; Add sent nothing`;
    });

    await report.check("servers", "saved enabled → starts, live", async () => {
      const args = [join(FIXTURES, "fixture_server.py"), "--init-delay", "1.5", "--large-resources", "--env-digest-tool"];
      await addServer({ name: "fx", command: python, args, env: { FIXTURE_SECRET: secret }, description: "fixture" }, "server-add");
      assert(!(await domHasSecret()), "the secret is in the DOM");
      // Nobody presses Start: saving an enabled server starts it, and the row follows its startup notifications.
      await page.locator('tr[data-server="fx"][data-status="starting"]').waitFor();
      await shot(page, "server-saved-enabled-starting");
      await page.locator('tr[data-server="fx"][data-status="connected"]').waitFor();
      const trail = (await row("fx").locator('[data-role="trail"]').textContent()) ?? "";
      assert(trail.includes("starting → ready"), `trail ${trail}`);
      await shot(page, "server-saved-enabled-ready");
      return `added, then without Start: starting → ready;${trail}`;
    });

    await report.check("servers", "failure reads as a sentence", async () => {
      await addServer({ name: "crash", command: python, args: [join(FIXTURES, "crash_at_start.py")] });
      await page.locator('tr[data-server="crash"][data-status="failed"]').waitFor();
      const trail = (await row("crash").locator('[data-role="trail"]').textContent()) ?? "";
      const error = row("crash").locator('[data-role="error"]');
      const sentence = (await error.locator('[data-role="sentence"]').textContent()) ?? "";
      const reason = (await error.locator('[data-role="reason"]').textContent()) ?? "";
      const whole = ((await error.textContent()) ?? "").trim();
      assert(trail.includes("starting → failed"), `trail ${trail}`);
      assert(sentence.startsWith("crash could not start: server process exited (exit code 3)"), `sentence: ${sentence}`);
      assert(whole.startsWith(sentence), `the error starts with ${whole.slice(0, 40)}`);
      assert(reason.includes("startupFailed"), `reason: ${reason}`);
      assert(whole.includes("fixture: fatal configuration error"), `no stderr line in ${whole}`);
      await shot(page, "servers-startup");
      await row("crash").screenshot({ path: join(out, "server-failure-sentence.png") });
      screenshots.push("server-failure-sentence.png");
      return `${trail.trim()}; "${sentence}" then ${reason}`;
    });

    await report.check("servers", "edit keeps the stored secret", async () => {
      await row("fx").getByRole("button", { name: "Edit" }).click();
      const form = page.locator("form.server-form");
      const value = await form.getByLabel("Value (Environment)").inputValue();
      assert(value === "***", `the form holds ${value === secret ? "the secret" : value}`);
      const backend = host?.client.initializeResult?.secretStore.backend ?? "";
      const kept = (await form.locator('[data-role="kept-in"]').first().textContent()) ?? "";
      assert(backend !== "" && kept.includes(`kept in ${backend}`), `the stored secret's row says "${kept}"`);
      await form.getByLabel("Description", { exact: true }).fill("fixture, edited");
      await shot(page, "server-edit");
      await form.getByRole("button", { name: "Save" }).click();
      await row("fx").getByText("fixture, edited").waitFor();
      await page.locator('tr[data-server="fx"][data-status="connected"]').waitFor();
      assert(!(await domHasSecret()), "the secret is in the DOM");
      return `the form showed "***" (${kept}) and sent it back; description saved; fx ready again`;
    });

    await report.check("oauth", "login completes, row refreshed", async () => {
      await addServer({ name: "sec", url: oauth.url, oauth: true });
      await page.locator('tr[data-server="sec"][data-auth="notLoggedIn"]').waitFor();
      await row("sec").getByRole("button", { name: "Log in" }).click();
      await page.locator('tr[data-server="sec"][data-auth="oAuth"]').waitFor();
      // Saved enabled, it tried to start and needed the login; with the new credential it connects.
      await page.locator('tr[data-server="sec"][data-status="connected"]').waitFor();
      await shot(page, "servers-after-login");
      return "notLoggedIn → browser followed the URL → completed → oAuth; ready";
    });

    await report.check("apps", "import from Cursor, dry run first", async () => {
      await page.getByRole("button", { name: "Import from app…" }).click();
      await page.getByLabel("App", { exact: true }).selectOption("cursor");
      const importButton = page.getByRole("button", { name: "Import", exact: true });
      assert(await importButton.isDisabled(), "Import is enabled before a dry run");
      await page.getByRole("button", { name: "Preview (dry run)" }).click();
      await page.locator('[data-role="import-result"]').getByText("Would import: cur").waitFor();
      assert((await row("cur").count()) === 0, "the dry run stored the server");
      await shot(page, "import");
      await importButton.click();
      await row("cur").waitFor();
      // Imported enabled, it is started; its command does not exist, and the row says so in a sentence.
      await page.locator('tr[data-server="cur"][data-status="failed"]').waitFor();
      const sentence = (await row("cur").locator('[data-role="sentence"]').textContent()) ?? "";
      assert(sentence.startsWith("cur could not start: its command cursor-tool is not on the daemon's PATH"), sentence);
      await row("cur").screenshot({ path: join(out, "server-failure-command-not-found.png") });
      screenshots.push("server-failure-command-not-found.png");
      return `dry run listed cur and stored nothing; import stored and started it: "${sentence}"`;
    });

    await report.check("apps", "sync to Codex, dry run first", async () => {
      await row("cur").getByRole("button", { name: "Edit" }).click();
      await page.locator("form.server-form").getByLabel("Codex").check();
      await page.locator("form.server-form").getByRole("button", { name: "Save" }).click();
      await page.locator("form.server-form").waitFor({ state: "detached" });
      await page.getByRole("button", { name: "Sync to apps…" }).click();
      await page.getByLabel("Codex").check();
      await page.getByRole("button", { name: "Preview (dry run)" }).click();
      const result = page.locator('[data-role="sync-result"] tr[data-app="codex"]');
      await result.waitFor();
      assert(!readFileSync(codexConfig, "utf8").includes("[mcp_servers.cur]"), "the dry run wrote the file");
      await shot(page, "sync");
      await page.getByRole("button", { name: "Write to apps" }).click();
      await page.locator('[data-role="sync-result"] caption').getByText("Written", { exact: true }).waitFor();
      const text = readFileSync(codexConfig, "utf8");
      assert(text.includes("[mcp_servers.cur]") && text.includes("# mine"), "codex config not written as expected");
      return "dry run wrote nothing; write added cur and kept the file's comments";
    });

    await report.check("page", "a banner belongs to its tab", async () => {
      await page.getByRole("button", { name: "Close" }).click();
      await row("crash").getByRole("button", { name: "Start" }).click();
      const serversBanner = page.locator('[data-banner-of="servers"] [data-kind="error"]');
      await serversBanner.getByText("crash could not start").waitFor();
      const said = (await serversBanner.locator('[data-role="sentence"]').textContent()) ?? "";
      assert(said.startsWith("crash could not start"), `the Servers banner says ${said}`);
      await shot(page, "banner-servers-error");
      await tab("tools");
      assert(!(await serversBanner.isVisible()), "the Servers banner shows on the Tools tab");
      assert((await page.locator('[data-banner-of="tools"]').textContent()) === "", "the Tools tab has a banner of its own already");
      await page.locator("#tool-server").selectOption("crash");
      await page.getByRole("button", { name: "Compare with a thread" }).click();
      const toolsBanner = page.locator('[data-banner-of="tools"] [data-kind="info"]');
      await toolsBanner.getByText("crash is not running").waitFor();
      assert(!(await page.getByText("crash could not start").first().isVisible()), "another tab's banner is visible");
      await shot(page, "banner-tools-tab-own");
      await tab("servers");
      assert(await serversBanner.isVisible(), "the Servers banner is gone after a round trip");
      assert(!(await toolsBanner.isVisible()), "the Tools banner shows on the Servers tab");
      await page.locator('[data-banner-of="servers"] button[aria-label="Dismiss"]').click();
      await tab("tools");
      await page.locator("#tool-server").selectOption("");
      return "Servers' error stays on Servers; Tools shows only its own; both still where they were raised";
    });

    await report.check("tools", "search with select:", async () => {
      await tab("tools");
      await page.getByLabel("Search tools").fill("select:mcp__fx__echo,mcp__fx__nope");
      await page.getByRole("button", { name: "Search" }).click();
      await page.locator('[data-tool="mcp__fx__echo"]').waitFor();
      const missing = (await page.locator('[data-role="tool-missing"]').textContent()) ?? "";
      assert(missing.includes("mcp__fx__nope"), `missing: ${missing}`);
      await page.locator('[data-tool="mcp__fx__echo"] summary').click();
      await shot(page, "tools");
      return `echo found; ${missing}`;
    });

    await report.check("tools", "no tool a thread gets is hidden", async () => {
      // npm server-everything offers trigger-elicitation-request and trigger-url-elicitation only to clients that
      // answer forms and URL requests: the page's connection gets 13 tools, a thread 15. The tab says why, and a
      // comparison names the ones it holds back.
      await addServer({ name: "everything", command: process.execPath, args: [EVERYTHING, "stdio"] });
      await page.locator('tr[data-server="everything"][data-status="connected"]').waitFor();
      await tab("tools");
      await page.getByLabel("Search tools").fill("");
      await page.locator("#tool-server").selectOption("everything");
      await page.getByRole("button", { name: "Search" }).click();
      const count = page.locator('[data-role="tool-count"]');
      await count.getByText("13 tool(s)", { exact: true }).waitFor();
      const note = (await page.locator('[data-role="tools-scope"] p').first().textContent()) ?? "";
      assert(note.includes("answers no forms") && note.includes("a thread may get more tools"), `note: ${note}`);
      await page.getByRole("button", { name: "Compare with a thread" }).click();
      const compared = page.locator('[data-role="thread-comparison"] li[data-compared="everything"]');
      await compared.waitFor();
      const said = (await compared.textContent()) ?? "";
      assert((await compared.getAttribute("data-thread-only")) === "2", `comparison: ${said}`);
      assert(said.includes("trigger-elicitation-request") && said.includes("trigger-url-elicitation"), `comparison: ${said}`);
      await count.getByText("13 tool(s) on this connection, 15 for a thread").waitFor();
      const held = page.locator('li[data-tool="mcp__everything__trigger-elicitation-request"][data-thread-only="true"]');
      await held.locator("summary").click();
      assert((await held.textContent())?.includes("thread only"), "the held-back tool is not marked");
      await shot(page, "tools-thread-only-named");
      await page.locator("#tool-server").selectOption("");
      return `13 listed with the reason; a thread gets 15: ${said.trim().slice(0, 90)}`;
    });

    await report.check("prompts", "get with arguments", async () => {
      await tab("prompts");
      await page.locator('[data-prompt="fx/greet"] button').click();
      await page.getByLabel("name (required)").fill("GUI smoke");
      await page.getByRole("button", { name: "Get prompt" }).click();
      await page.locator('[data-role="prompt-result"]').getByText("Hello, GUI smoke!").waitFor();
      await shot(page, "prompts");
      return "greet → Hello, GUI smoke!";
    });

    await report.check("resources", "2 MiB text preview truncated", async () => {
      await tab("resources");
      await page.locator('li[data-uri="fixture://large/text"]').getByRole("button", { name: "Preview" }).click();
      const block = page.locator('[data-role="resource-preview"] [data-truncated="true"]');
      await block.waitFor();
      const shown = await block.locator("pre").evaluate((pre) => pre.textContent?.length ?? 0);
      const size = await domSize();
      assert(shown <= 16 * 1024, `${shown} characters shown`);
      assert(size < DOM_LIMIT_CHARS, `DOM is ${size} characters`);
      await shot(page, "resources-text");
      return `${shown} of 2,097,152 characters shown; DOM ${size.toLocaleString()} characters`;
    });

    await report.check("resources", "1 MiB image preview summarized", async () => {
      await page.locator('li[data-uri="fixture://large/image"]').getByRole("button", { name: "Preview" }).click();
      const summary = page.locator('[data-role="resource-preview"] [data-kind="image"]');
      await summary.waitFor();
      const text = (await summary.textContent()) ?? "";
      const bytes = Number(await summary.getAttribute("data-bytes"));
      const size = await domSize();
      // The digest comes only with `preview: true`: the page never asked for the base64 itself.
      assert(text.includes("image/png") && text.includes("sha256") && bytes > 1_000_000, `summary: ${text}`);
      assert(size < DOM_LIMIT_CHARS, `DOM is ${size} characters`);
      await shot(page, "resources-image");
      return `summary: image/png, ${bytes.toLocaleString()} bytes, sha256; DOM ${size.toLocaleString()} characters`;
    });

    await report.check("resources", "template filled and read", async () => {
      await page.getByLabel("id of fixture://item/{id}").fill("7");
      await page.locator('li[data-template="fixture://item/{id}"]').getByRole("button", { name: "Preview" }).click();
      await page.locator('[data-role="resource-preview"]').getByText('"id": "7"').waitFor();
      return "fixture://item/7 → {\"id\": \"7\"}";
    });

    await report.check("thread", "start a thread", async () => {
      await tab("thread");
      const ticked = await page.locator('[data-role="thread-servers"] input:checked').count();
      const offered = await page.locator('[data-role="thread-servers"] input').count();
      assert(ticked === offered && offered > 0, `every enabled server starts ticked (${ticked} of ${offered})`);
      await chooseThreadServers(["fx", "everything"]);
      await page.getByRole("button", { name: "Start thread" }).click();
      await page.locator('[data-thread] [data-server="fx"]').getByText("fx: ready").waitFor();
      await page.locator('[data-thread] [data-server="everything"]').getByText("everything: ready").waitFor();
      const id = await page.locator("[data-thread]").getAttribute("data-thread");
      return `thread ${id}: fx and everything ready`;
    });

    await report.check("thread", "arguments from schema defaults", async () => {
      await page.getByLabel("Tool", { exact: true }).selectOption("mcp__everything__trigger-long-running-operation");
      const prefilled = JSON.parse(await page.getByLabel("Arguments (JSON)").inputValue()) as unknown;
      assert(JSON.stringify(prefilled) === JSON.stringify({ duration: 10, steps: 5 }), `prefilled ${JSON.stringify(prefilled)}`);
      await shot(page, "thread-arguments-from-defaults");
      await page.getByLabel("Tool", { exact: true }).selectOption("mcp__fx__echo");
      const echo = await page.getByLabel("Arguments (JSON)").inputValue();
      const hint = (await page.locator('[data-role="args-hint"]').textContent()) ?? "";
      assert(JSON.stringify(JSON.parse(echo)) === "{}", `echo prefilled ${echo}`);
      assert(hint.includes('"text" (string)') && hint.includes("required, with no default"), `hint: ${hint}`);
      return `long-running: {"duration": 10, "steps": 5} (its defaults, not zeros); echo: {} and "${hint.slice(hint.indexOf("Add"))}"`;
    });

    await report.check("thread", "progress shows its numbers", async () => {
      await callTool("mcp__fx__progress", { steps: 5, delay_ms: 700 });
      const text = page.locator('[data-role="progress-text"]');
      await text.getByText(/^[2-4] \/ 5 — step [2-4]\/5$/).waitFor();
      const shown = (await text.textContent()) ?? "";
      const bar = page.locator('[data-role="progress"]');
      const max = await bar.evaluate((element) => (element as HTMLProgressElement).max);
      const value = await bar.evaluate((element) => (element as HTMLProgressElement).value);
      assert(max === 5 && value >= 2, `bar ${value}/${max}`);
      await shot(page, "thread-progress-numbers");
      const result = await resultText();
      assert(result.includes("done 5"), `result: ${result.slice(0, 80)}`);
      return `mid-call: "${shown}", bar ${value}/${max}`;
    });

    await report.check("thread", "the user's own Cancel is not an error", async () => {
      await callTool("mcp__fx__progress", { steps: 20, delay_ms: 500 });
      await page.locator('[data-role="progress-text"]').getByText(/^[1-9]\d* \/ 20/).waitFor();
      await page.getByRole("button", { name: "Cancel call" }).click();
      const cancelled = page.locator('[data-role="call-cancelled"]');
      await cancelled.waitFor();
      assert((await page.locator('[data-role="call-error"]').count()) === 0, "a cancel shown as an error");
      await shot(page, "thread-cancelled");
      return (await cancelled.textContent()) ?? "";
    });

    await report.check("thread", "elicitation answered in the modal", async () => {
      await callTool("mcp__fx__ask", { question: "Who is testing?" });
      const dialog = page.locator("dialog#elicitation[open]");
      await dialog.waitFor();
      const focusInside = await page.evaluate(() => document.activeElement?.closest("dialog#elicitation") !== null);
      assert(focusInside, "focus is not in the modal");
      await shot(page, "elicitation");
      await dialog.getByRole("button", { name: "Accept" }).click();
      const error = (await dialog.locator('[data-field="name"] .field-error').textContent()) ?? "";
      assert(error !== "", "an empty required field was accepted");
      await dialog.getByLabel("name (required)").fill("Ada");
      await dialog.getByLabel("age (required)").fill("36");
      await dialog.getByRole("button", { name: "Accept" }).click();
      await dialog.waitFor({ state: "detached" }).catch(() => undefined);
      const text = await resultText();
      assert(text.includes('"action": "accept"') && text.includes('"name": "Ada"') && text.includes('"age": 36'), text);
      await page.locator('[data-role="resolved"] li[data-action="accept"]').waitFor();
      await shot(page, "thread-elicitation-result");
      return `required field refused (${error}); accepted → ${text.slice(text.indexOf("{"), text.indexOf("}}") + 2)}`;
    });

    await report.check("thread", "Escape cancels the form", async () => {
      await callTool("mcp__fx__ask", { question: "Cancel me" });
      await page.locator("dialog#elicitation[open]").waitFor();
      await page.keyboard.press("Escape");
      await page.locator('[data-role="tool-result"]').getByText('{"action": "cancel"}').waitFor();
      return 'Escape → the server got {"action": "cancel"}';
    });

    await report.check("thread", "secret kept through the edit", async () => {
      await callTool("mcp__fx__env_digest", { name: "FIXTURE_SECRET" });
      const text = await resultText();
      const expected = createHash("sha256").update(secret).digest("hex");
      assert(text.includes(expected), "the server did not get the stored secret");
      assert(!(await domHasSecret()), "the secret is in the DOM");
      await shot(page, "thread");
      return "the server's FIXTURE_SECRET has the SHA-256 of the value typed at creation";
    });

    await report.check("resources", "subscription update shown", async () => {
      await tab("resources");
      const threadOption = page.locator("#resource-context option").nth(1);
      await page.locator("#resource-context").selectOption((await threadOption.getAttribute("value")) ?? "");
      const item = page.locator('li[data-uri="fixture://static/hello"]');
      await item.getByRole("button", { name: "Subscribe" }).click();
      await page.locator('tr[data-subscription="fixture://static/hello"]').waitFor();
      await callTool("mcp__fx__touch_resource", { uri: "fixture://static/hello" });
      await resultText();
      await tab("resources");
      await page.locator('tr[data-subscription="fixture://static/hello"]:not([data-updates="0"])').waitFor();
      const updates = await page.locator('tr[data-subscription="fixture://static/hello"]').getAttribute("data-updates");
      await shot(page, "resources-subscriptions");
      return `mcp:resource_updated counted: ${updates}`;
    });

    // MCP Apps (SPEC §13): views rendered in the Thread tab inside the sandbox on the host's second origin.
    const view = (): FrameLocator => page.frameLocator('[data-role="app-view"] iframe.mcp-app-view').frameLocator("iframe");
    // A view is painted in its own (out-of-process) frame, which Chromium does not draw while it is off screen:
    // bring it into view and wait (bounded) for it to draw two frames, so the screenshot shows the view itself.
    const viewShot = async (name: string): Promise<void> => {
      await page.locator('[data-role="app-view"] iframe.mcp-app-view').scrollIntoViewIfNeeded();
      await view()
        .locator("body")
        .evaluate(
          () =>
            new Promise<void>((done) => {
              const bound = setTimeout(done, 5000);
              requestAnimationFrame(() => requestAnimationFrame(() => (clearTimeout(bound), done())));
            }),
        );
      await shot(page, name);
    };

    await report.check("apps", "our fixture's view rendered", async () => {
      await addServer({ name: "counter", command: python, args: [join(FIXTURES, "app_server.py")] });
      await addServer({ name: "vanilla", command: process.execPath, args: [VANILLA, "--stdio"] });
      await tab("thread");
      await chooseThreadServers(["counter", "vanilla"]);
      await page.getByRole("button", { name: "Start thread" }).click();
      await page.locator('[data-thread] [data-server="counter"]').getByText("counter: ready").waitFor();
      await page.locator('[data-thread] [data-server="vanilla"]').getByText("vanilla: ready").waitFor();
      const offered = await page.locator("#thread-tool option").allTextContents();
      assert(!offered.includes("mcp__counter__increment"), `the model is offered an app-only tool: ${offered.join(", ")}`);
      await callTool("mcp__counter__show_counter", { start: 3 });
      await page.locator('[data-role="app-view"][data-ready="true"]').waitFor();
      await view().locator("#count").getByText("3", { exact: true }).waitFor();
      const input = (await view().locator("#input").textContent()) ?? "";
      assert(input.includes('{"start":3}'), `tool input: ${input}`);
      const status = (await view().locator("#status").textContent()) ?? "";
      assert(status.includes("mcp-app-server-settings"), `status: ${status}`);
      const frame = page.locator('[data-role="app-view"] iframe.mcp-app-view');
      const origin = new URL((await frame.getAttribute("src")) ?? "").origin;
      assert(origin === host?.sandboxOrigin && origin !== new URL(page.url()).origin, `sandbox origin ${origin}`);
      const height = await frame.evaluate((element) => (element as HTMLIFrameElement).style.height);
      assert(height !== "" && height !== "320px", `the frame did not follow the view's size (${height})`);
      await viewShot("app-view-counter");
      return `count 3 from the result, input ${input.slice(7)}; sandbox ${origin}; frame height ${height} from the view`;
    });

    await report.check("apps", "the view calls an app-only tool", async () => {
      await view().getByRole("button", { name: "Increment (app-only tool)" }).click();
      await view().locator("#count").getByText("4", { exact: true }).waitFor();
      await view().getByRole("button", { name: "Reset (model-only tool)" }).click();
      await view().locator("#status").getByText(/^reset_counter refused/).waitFor();
      const refused = (await view().locator("#status").textContent()) ?? "";
      assert(refused.includes("not by the app"), `refusal: ${refused}`);
      await view().locator("#count").getByText("4", { exact: true }).waitFor();
      await page.locator('[data-role="app-view-activity"]').getByText("the view called increment").waitFor();
      await viewShot("app-view-app-only-call");
      return `increment (app only) → 4; reset_counter (model only) → "${refused.slice(0, 80)}"`;
    });

    await report.check("apps", "an undeclared fetch is blocked", async () => {
      await view().getByRole("button", { name: "Fetch declared" }).click();
      await view().locator("#fetched-declared").getByText(/not by the CSP/).waitFor();
      await view().getByRole("button", { name: "Fetch elsewhere" }).click();
      await view().locator("#fetched").getByText("fetch: blocked by the CSP (connect-src)").waitFor();
      const declared = (await view().locator("#fetched-declared").textContent()) ?? "";
      assert(declared.includes("not by the CSP"), `declared: ${declared}`);
      await viewShot("app-view-csp-blocked");
      return `undeclared origin: connect-src refused it; declared origin: ${declared.slice(16)}`;
    });

    await report.check("apps", "closing tears the view down", async () => {
      await page.locator('[data-role="app-view"]').getByRole("button", { name: "Close view" }).click();
      await page.locator('[data-role="app-view"][data-closed="true"]').waitFor();
      const frames = await page.locator('[data-role="app-view"] iframe').count();
      assert(frames === 0, `${frames} frame(s) left`);
      return "ui/resource-teardown answered, the bridge closed and the frame removed";
    });

    await report.check("apps", "npm server-basic-vanillajs view rendered", async () => {
      const tools = await page.locator("#thread-tool option").allTextContents();
      const opener = tools.find((name) => name.startsWith("mcp__vanilla__"));
      assert(opener !== undefined, `vanilla offers no tool: ${tools.join(", ")}`);
      await callTool(opener, {});
      await page.locator('[data-role="app-view"][data-server="vanilla"][data-ready="true"]').waitFor();
      await view().getByRole("button", { name: "Get Server Time" }).click();
      const called = page.locator('[data-role="app-view-activity"] li').filter({ hasText: "the view called" });
      await called.first().waitFor();
      const time = (await view().locator("#server-time").textContent()) ?? "";
      await viewShot("app-view-basic-vanillajs");
      await resultText();
      const note = (await called.first().textContent()) ?? "";
      return `${opener}: the view rendered, showing "${time.trim().slice(0, 40)}"; ${note.slice(note.indexOf("the view"))}`;
    });

    await report.check("apps", "npm server-pdf view rendered", async () => {
      // The official PDF App server: a 4.3 MB view (PDF.js inlined) read whole, then the view itself fetches the PDF
      // through its app-only read_pdf_bytes and draws the page. A local file the server is given, no network.
      const marker = "Drawn by the GUI smoke";
      const file = join(base, "smoke.pdf");
      writeFileSync(file, onePagePdf(marker));
      await addServer({ name: "pdf", command: process.execPath, args: [PDF_SERVER, "--stdio", file] });
      await tab("thread");
      await chooseThreadServers(["pdf"]);
      await page.getByRole("button", { name: "Start thread" }).click();
      await page.locator('[data-thread] [data-server="pdf"]').getByText("pdf: ready").waitFor({ timeout: 60_000 });
      await callTool("mcp__pdf__display_pdf", { url: file });
      await page.locator('[data-role="app-view"][data-server="pdf"][data-ready="true"]').waitFor({ timeout: 60_000 });
      // Chromium draws a frame only on screen, and PDF.js renders a page on animation frames.
      await page.locator('[data-role="app-view"] iframe.mcp-app-view').scrollIntoViewIfNeeded();
      await view().locator("#text-layer").getByText(marker).waitFor();
      const pages = ((await view().locator("#total-pages").textContent()) ?? "").trim();
      assert(pages.endsWith("1"), `the view counts ${pages} pages`);
      const inked = await view()
        .locator("#pdf-canvas")
        .evaluate((canvas) => {
          const element = canvas as HTMLCanvasElement;
          const pixels = element.getContext("2d")?.getImageData(0, 0, element.width, element.height).data ?? [];
          let dark = 0;
          for (let i = 0; i < pixels.length; i += 4) if ((pixels[i] ?? 255) < 128 && (pixels[i + 3] ?? 0) > 0) dark += 1;
          return dark;
        });
      assert(inked > 100, `the page's canvas has ${inked} dark pixels: nothing was drawn`);
      const reads = await page.locator('[data-role="app-view-activity"] li').filter({ hasText: "read_pdf_bytes" }).count();
      assert(reads > 0, "the view never read the PDF through its app-only tool");
      const context = page.locator('[data-role="app-view-context"]');
      await context.getByText("Current Page: 1/1").waitFor();
      await viewShot("app-view-pdf");
      assert(pageErrors.length === 0, `page errors: ${pageErrors.join("; ")}`);
      return `"${marker}" in the view's text layer, ${inked} dark pixels on its canvas, ${reads} read_pdf_bytes call(s); the view told the model "Current Page: 1/1"`;
    });

    await report.check("browse", "install from the registry", async () => {
      await tab("browse");
      await page.locator('[data-role="registry-query"]').fill("everything");
      await page.locator('[data-role="registry-search"]').click();
      await page.locator('[data-entry="io.github.modelcontextprotocol/everything"] button').click();
      const detail = page.locator('[data-role="registry-detail"]');
      await detail.locator('[data-input="EVERYTHING_TOKEN"]').fill(`registry-${secret}`);
      assert((await detail.locator('[data-input="EVERYTHING_TOKEN"]').getAttribute("type")) === "password", "secret shown");
      await detail.locator('[data-role="install-name"]').fill("from-registry"); // "everything" is taken above
      await shot(page, "browse-entry");
      await detail.locator('[data-role="install"]').click();
      await detail.locator('[data-role="install-status"][data-status="connected"]').waitFor({ timeout: 60_000 });
      await shot(page, "browse-installed");
      assert(!(await domHasSecret()), "the secret is in the DOM");
      return "searched, filled the form (secret masked), installed npm server-everything and saw it connected";
    });

    await report.check("browse", "install a bundle after consent", async () => {
      const folder = join(base, "bundle-src");
      mkdirSync(join(folder, "server"), { recursive: true });
      for (const file of ["fixture_server.py", "serving.py"]) {
        writeFileSync(join(folder, "server", file), readFileSync(join(FIXTURES, file)));
      }
      const manifest = {
        manifest_version: "0.3",
        name: "fixture-bundle",
        display_name: "Fixture bundle",
        version: "1.0.0",
        description: "The SDK fixture server, bundled.",
        author: { name: "GUI smoke" },
        server: {
          type: "python",
          entry_point: "server/fixture_server.py",
          mcp_config: { command: python, args: ["${__dirname}${/}server${/}fixture_server.py"], env: { TOKEN: "${user_config.token}" } },
        },
        user_config: { token: { type: "string", title: "Token", description: "A secret", sensitive: true, required: true } },
      };
      writeFileSync(join(folder, "manifest.json"), JSON.stringify(manifest));
      const bundle = join(base, "fixture.mcpb");
      const packed = spawnSync(join(ROOT, "node_modules", ".bin", "mcpb"), ["pack", folder, bundle], { encoding: "utf8" });
      assert(packed.status === 0, `mcpb pack failed: ${packed.stderr}`);
      await tab("browse");
      await page.locator('[data-role="bundle-path"]').fill(bundle);
      await page.locator('[data-role="bundle-inspect"]').click();
      const detail = page.locator('[data-role="bundle-detail"]');
      await detail.locator('[data-role="bundle-signature"]').waitFor();
      await detail.locator('[data-input="token"]').fill(`bundle-${secret}`);
      await shot(page, "bundle-consent");
      await detail.locator('[data-role="install-name"]').fill("bundled");
      await detail.locator('[data-role="install"]').click();
      await detail.locator('[data-role="install-status"][data-status="connected"]').waitFor({ timeout: 60_000 });
      await shot(page, "bundle-installed");
      assert(!(await domHasSecret()), "the secret is in the DOM");
      return "inspected (manifest, signature, compatibility), consented, installed and saw it connected";
    });

    await report.check("page", "keyboard and activity", async () => {
      await page.locator('[role="tab"][data-tab="resources"]').focus();
      await page.keyboard.press("ArrowRight");
      const focused = await page.evaluate(() => document.activeElement?.getAttribute("data-tab"));
      assert(focused === "thread", `ArrowRight moved focus to ${focused}`);
      await page.keyboard.press("ArrowRight");
      await page.locator("table.activity").getByText("mcpServer/startupStatus/updated").first().waitFor();
      await shot(page, "activity");
      const size = await domSize();
      assert(!(await domHasSecret()), "the secret is in the DOM");
      assert(pageErrors.length === 0, `page errors: ${pageErrors.join("; ")}`);
      return `tabs follow the arrow keys; largest DOM seen ${largestDom.toLocaleString()} characters (now ${size.toLocaleString()}); no page error`;
    });
  } catch (error) {
    await report.check("setup", "smoke environment", async () => {
      throw error;
    });
  } finally {
    await context?.close().catch(() => undefined);
    await host?.close().catch(() => undefined);
    for (const child of children) child.kill("SIGTERM");
    rmSync(base, { recursive: true, force: true });
  }
  return report.print(screenshots, out);
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`gui-smoke: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
