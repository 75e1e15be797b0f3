// `--open` against the real daemon: the browser is handed a one-time code, never the run's token (a command line is
// readable by every local user), and the host trades each code once, within its time, for its own page only.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { WebSocket } from "ws";
import { SESSION_PATH, startHost } from "../src/host/host.js";
import type { Host } from "../src/host/host.js";
import { CODE_TTL_MS } from "../src/host/codes.js";
import { DAEMON_COMMAND, MAIN_JS, httpRequest, waitFor } from "./helpers.js";

let base: string;

before(() => {
  base = mkdtempSync(join(tmpdir(), "settings-open-"));
});

after(() => {
  rmSync(base, { recursive: true, force: true });
});

/** Load the page as a browser does: the nonce cookie the host sets on a first load (`name=value`). */
async function browserCookie(port: number): Promise<string> {
  const page = await httpRequest(port, "GET", "/", { host: `127.0.0.1:${port}` });
  const cookie = String(page.headers["set-cookie"] ?? "").split(";")[0] ?? "";
  assert.match(cookie, /^mcp-settings-browser=[0-9a-f]{48}$/);
  assert.match(String(page.headers["set-cookie"]), /HttpOnly; SameSite=Strict/);
  return cookie;
}

/** Open the bridge with `token` from a browser holding `cookie`; resolves with the socket, rejects when refused. */
function bridge(port: number, token: string, cookie: string | undefined): Promise<WebSocket> {
  const headers: Record<string, string> = { Origin: `http://127.0.0.1:${port}` };
  if (cookie !== undefined) headers.Cookie = cookie;
  const socket = new WebSocket(`ws://127.0.0.1:${port}/bridge?token=${token}`, { headers });
  return new Promise((resolveOpen, reject) => {
    socket.once("open", () => resolveOpen(socket));
    socket.once("error", reject);
  });
}

/** Trade `code` at the host as a page of `origin` would; the answer's status and token. */
async function trade(
  port: number,
  code: string,
  origin: string | undefined,
  cookie?: string,
): Promise<{ status: number; token?: string }> {
  const headers: Record<string, string> = { "Content-Type": "application/json" };
  if (origin !== undefined) headers.Origin = origin;
  if (cookie !== undefined) headers.Cookie = cookie;
  const answer = await httpRequest(port, "POST", SESSION_PATH, headers, JSON.stringify({ code }));
  if (answer.status !== 200) return { status: answer.status };
  return { status: answer.status, token: (JSON.parse(answer.body) as { token: string }).token };
}

function codeOf(url: string): string {
  const code = new URLSearchParams(new URL(url).hash.slice(1)).get("code");
  assert.ok(code !== null && code.length === 64, `no one-time code in ${url}`);
  return code;
}

test("--open starts the system opener with a one-time code, and its command line never holds the token", async () => {
  // The system opener (xdg-open, or open on macOS) is found on PATH: ours records the command line it was given,
  // as any local user could read it from /proc.
  const bin = join(base, "bin");
  const recorded = join(base, "opener-cmdline");
  const opener = process.platform === "darwin" ? "open" : "xdg-open";
  mkdirSync(bin);
  writeFileSync(
    join(bin, opener),
    `#!/bin/sh\nif [ -r /proc/$$/cmdline ]; then cat /proc/$$/cmdline; else printf '%s\\0' "$0" "$@"; fi > '${recorded}.part'\nmv '${recorded}.part' '${recorded}'\n`,
  );
  chmodSync(join(bin, opener), 0o755);

  const main = spawn(
    process.execPath,
    [MAIN_JS, "--daemon-command", JSON.stringify(DAEMON_COMMAND), "--data-dir", join(base, "data"), "--open"],
    { env: { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ""}` }, stdio: ["ignore", "pipe", "pipe"] },
  );
  const exited = new Promise<number | null>((resolveExit) => main.once("exit", (code) => resolveExit(code)));
  try {
    const printed = await new Promise<string>((resolveLine, reject) => {
      const lines = createInterface({ input: main.stdout });
      lines.on("line", (line) => {
        const match = /^mcp-app-server settings: (\S+)$/.exec(line);
        if (match?.[1] !== undefined) resolveLine(match[1]);
      });
      main.once("exit", (code) => reject(new Error(`the host exited (${code}) before printing its URL`)));
    });
    const url = new URL(printed);
    const token = new URLSearchParams(url.hash.slice(1)).get("token");
    assert.ok(token !== null && token.length === 64, `the printed URL carries no token: ${printed}`);

    await waitFor(() => existsSync(recorded), 20_000, "the opener was started");
    const argv = readFileSync(recorded, "utf8").split("\0").filter((part) => part !== "");
    assert.ok(!argv.some((part) => part.includes(token)), `the opener's command line holds the token: ${argv.join(" ")}`);
    const opened = argv[argv.length - 1] ?? "";
    assert.equal(new URL(opened).origin, url.origin);

    const origin = url.origin;
    const code = codeOf(opened);
    const cookie = await browserCookie(Number(url.port));
    const traded = await trade(Number(url.port), code, origin, cookie);
    assert.equal(traded.status, 200);
    assert.match(traded.token ?? "", /^[0-9a-f]{64}$/);
    assert.notEqual(traded.token, token, "the trade handed out the run's token");
    assert.deepEqual(await trade(Number(url.port), code, origin, cookie), { status: 403 }, "a code was good twice");
  } finally {
    main.kill("SIGTERM");
  }
  assert.equal(await exited, 0);
});

test("a code is good once, within its time, and only for the page's own origin", async (t) => {
  let now = 1_000_000;
  const opened: string[] = [];
  const host: Host = await startHost({
    daemonCommand: DAEMON_COMMAND,
    dataDir: join(base, "library"),
    log: () => {},
    clock: () => now,
    openExternal: (url) => {
      opened.push(url);
    },
  });
  t.after(() => host.close());
  const origin = `http://127.0.0.1:${host.port}`;

  await host.openPage();
  assert.equal(opened.length, 1);
  assert.ok(!(opened[0] ?? "").includes(host.token), "openPage handed the token to the opener");
  const code = codeOf(opened[0] ?? "");

  // Another site's page, a request with no Origin, or a browser that never loaded the page (a program that read
  // the code from a process list) is refused and does not spend the code.
  const cookie = await browserCookie(host.port);
  assert.equal((await trade(host.port, code, "http://evil.example", cookie)).status, 403);
  assert.equal((await trade(host.port, code, `http://127.0.0.1:${host.port + 1}`, cookie)).status, 403);
  assert.equal((await trade(host.port, code, undefined, cookie)).status, 403);
  assert.equal((await trade(host.port, code, origin)).status, 403);
  assert.equal((await trade(host.port, code, origin, "mcp-settings-browser=" + "0".repeat(48))).status, 403);
  const traded = await trade(host.port, code, origin, cookie);
  assert.equal(traded.status, 200);
  const session = traded.token ?? "";
  assert.match(session, /^[0-9a-f]{64}$/);
  assert.notEqual(session, host.token);

  // The session opens the bridge from the browser that traded the code, and from no other.
  const socket = await bridge(host.port, session, cookie);
  await assert.rejects(bridge(host.port, session, undefined));
  await assert.rejects(bridge(host.port, session, await browserCookie(host.port)));

  // The same browser opening the link twice is refused and keeps its session.
  assert.equal((await trade(host.port, code, origin, cookie)).status, 403, "a replayed code");
  assert.equal(socket.readyState, WebSocket.OPEN);
  (await bridge(host.port, session, cookie)).close();

  // The code comes back from another browser (the person's, after whoever traded it first): refused, and the
  // session it opened is ended, its bridge closed.
  const closed = new Promise<void>((resolveClosed) => socket.once("close", () => resolveClosed()));
  assert.equal((await trade(host.port, code, origin, await browserCookie(host.port))).status, 403, "a replayed code");
  await closed;
  await assert.rejects(bridge(host.port, session, cookie));

  const stale = codeOf(host.oneTimeUrl());
  now += CODE_TTL_MS;
  assert.equal((await trade(host.port, stale, origin, cookie)).status, 403, "an expired code was accepted");
  const fresh = codeOf(host.oneTimeUrl());
  now += CODE_TTL_MS - 1;
  assert.equal((await trade(host.port, fresh, origin, cookie)).status, 200, "a code was refused within its time");
  assert.equal((await trade(host.port, "0".repeat(64), origin, cookie)).status, 403, "an unknown code was accepted");
  assert.equal((await trade(host.port, "", origin, cookie)).status, 403);
});
