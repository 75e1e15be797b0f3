// The reference desktop host (SPEC §12): it owns the daemon sidecar (spawned through the client runtime, restarted
// if it crashes), serves the settings page on loopback, bridges each page to its own daemon connection, and opens
// the system browser when the page asks for a login. The page gets this run's token from the URL the host prints,
// or by trading the one-time code of `openPage` (nothing the host starts ever carries the token).
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AppServerClient } from "mcp-app-server-client";
import type { SidecarExit } from "mcp-app-server-client";
import { Bridge } from "./bridge.js";
import { DaemonLog } from "./daemon-log.js";
import { externalUrl, openInSystemBrowser } from "./browser.js";
import type { OpenExternal } from "./browser.js";
import { OneTimeCodes } from "./codes.js";
import { Gate, newToken } from "./gate.js";
import { PageFiles, securityHeaders } from "./pages.js";
import { SandboxServer } from "./sandbox.js";

/** The host's name and version, as the daemon sees its lifecycle connection. */
export const HOST_INFO = { name: "mcp-app-server-settings-host", version: "0.1.0" } as const;
/** The page's call to open a URL in the system browser. */
export const OPEN_PATH = "/host/open";
/** The header that carries the token on host calls (a custom header also forces a CORS preflight elsewhere). */
export const TOKEN_HEADER = "x-bridge-token";
/** The page's trade of a one-time code (`{code}`) for this run's token (`{token}`). */
export const SESSION_PATH = "/host/session";
const MAX_BODY_BYTES = 16 * 1024;

/** How to start a host. */
export interface HostOptions {
  /** The daemon's argv (e.g. `[".venv/bin/python", "-m", "app_server"]` or `["mcp-app-server"]`). */
  readonly daemonCommand: readonly string[];
  /** Passed as `--data-dir`; absent: the daemon's default (the user's data dir). */
  readonly dataDir?: string | undefined;
  /** Variables set for the daemon on top of this process's environment. */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined;
  /** The loopback port to serve on (0, the default: a free one). */
  readonly port?: number | undefined;
  /** Opens a login URL; default: the system browser. */
  readonly openExternal?: OpenExternal | undefined;
  /** Where the host's own lines go (default stderr). */
  readonly log?: ((line: string) => void) | undefined;
  /** A fixed token (tests); default: a fresh random one per run. */
  readonly token?: string | undefined;
  /** How long a one-time code stays good (default `CODE_TTL_MS`). */
  readonly codeTtlMs?: number | undefined;
  /** The clock one-time codes expire by, in ms (tests); default `Date.now`. */
  readonly clock?: (() => number) | undefined;
}

/** A running host. */
export interface Host {
  /** The page's URL with the token in its fragment, for a person to open (print it; never pass it to a process). */
  readonly url: string;
  readonly port: number;
  readonly token: string;
  /** The MCP Apps sandbox's origin (a second loopback port). */
  readonly sandboxOrigin: string;
  /** The daemon's `--listen` socket. */
  readonly socketPath: string;
  /** The file the daemon's log lines are appended to, in its data dir. */
  readonly daemonLogPath: string | undefined;
  /** The lifecycle connection (the sidecar's stdio). */
  readonly client: AppServerClient;
  /** Page connections open now. */
  pages(): number;
  /** The page's URL with a fresh one-time code in its fragment (`/#code=…`): good for one page, for a short time. */
  oneTimeUrl(): string;
  /** Open the page in the browser (`openExternal`) with a one-time code, never the token. */
  openPage(): Promise<void>;
  /** Stop serving, close the pages' connections and end the sidecar (stdin EOF); resolves when it has exited. */
  close(): Promise<void>;
}

/** Start the daemon and serve the page; resolves once the daemon is initialized and the page is being served. */
export async function startHost(options: HostOptions): Promise<Host> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const token = options.token ?? newToken();
  const openExternal = options.openExternal ?? openInSystemBrowser;
  const [command, ...args] = options.daemonCommand;
  if (command === undefined) throw new Error("the daemon command is empty");
  const socketDir = mkdtempSync(join(tmpdir(), "mcp-settings-"));
  const socketPath = join(socketDir, "daemon.sock");

  const daemonLog = new DaemonLog();
  let client: AppServerClient;
  try {
    client = await AppServerClient.spawn(command, [...args, "--listen", `unix:${socketPath}`], {
      dataDir: options.dataDir,
      env: options.env,
      clientInfo: HOST_INFO,
      // This host renders MCP Apps views: servers are told so on every connection the daemon opens.
      capabilities: { mcpApps: {} },
      restart: true,
      stderr: daemonLog,
    });
  } catch (error) {
    rmSync(socketDir, { recursive: true, force: true });
    throw error;
  }
  const dataDir = client.initializeResult?.dataDir;
  if (dataDir !== undefined) daemonLog.open(dataDir);
  client.on("exit", (exit: SidecarExit) => {
    if (exit.expected) return;
    const tail = exit.stderrTail.trim().split("\n").slice(-3).join(" | ");
    log(`daemon exited (code ${exit.code}, signal ${exit.signal})${exit.restarting ? "; restarting" : ""}: ${tail}`);
  });
  client.on("restarted", () => log("daemon restarted; pages reconnect"));

  let port = 0;
  const sandbox = new SandboxServer(() => port);
  const gate = new Gate(token, () => port);
  const codes = new OneTimeCodes(options.codeTtlMs, options.clock);
  const bridge = new Bridge(socketPath, gate, log);
  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      log(`host: ${error instanceof Error ? error.message : String(error)}`);
      if (!response.headersSent) answer(response, 500, "internal error");
      else response.destroy();
    });
  });
  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const hostRefusal = gate.hostRefusal(request);
    if (hostRefusal !== undefined) {
      answer(response, hostRefusal.status, hostRefusal.reason);
      return;
    }
    const path = new URL(request.url ?? "/", "http://127.0.0.1").pathname;
    if ((request.method === "GET" || request.method === "HEAD") && pages.serve(request, response, path)) return;
    if (path === OPEN_PATH && request.method === "POST") {
      await openRequested(request, response);
      return;
    }
    if (path === SESSION_PATH && request.method === "POST") {
      await sessionRequested(request, response);
      return;
    }
    answer(response, 404, "not found");
  };
  const openRequested = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const header = request.headers[TOKEN_HEADER];
    const refusal = gate.refusal(request, typeof header === "string" ? header : undefined);
    if (refusal !== undefined) {
      answer(response, refusal.status, refusal.reason);
      return;
    }
    const body = await readBody(request);
    const url = externalUrl(body === undefined ? undefined : field(body, "url"));
    if (url === undefined) {
      answer(response, 400, "expected {\"url\": an http(s) URL}");
      return;
    }
    await openExternal(url.href);
    log(`opened a login page in the browser (${url.origin})`);
    answer(response, 204, "");
  };
  const sessionRequested = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    // The Origin first: another site's page cannot spend (or learn anything about) a code.
    const refusal = gate.originRefusal(request);
    if (refusal !== undefined) {
      answer(response, refusal.status, refusal.reason);
      return;
    }
    const body = await readBody(request);
    const outcome = codes.redeem(body === undefined ? undefined : field(body, "code"));
    if (outcome !== "ok") {
      log(
        outcome === "used"
          ? "refused a one-time code that was already used: if you did not open the page twice, another program may have read it"
          : `refused a one-time code (${outcome})`,
      );
      answer(response, 403, "the code is unknown, already used or expired: open the URL the host printed");
      return;
    }
    const text = JSON.stringify({ token });
    response.writeHead(200, {
      "Content-Type": "application/json; charset=utf-8",
      "Content-Length": Buffer.byteLength(text),
      ...securityHeaders(""),
    });
    response.end(text);
  };
  server.on("upgrade", (request: IncomingMessage, socket, head: Buffer) => bridge.upgrade(request, socket, head));

  let pages: PageFiles;
  try {
    await sandbox.listen();
    pages = new PageFiles(sandbox.origin);
    await listen(server, options.port ?? 0);
  } catch (error) {
    await sandbox.close();
    await client.close();
    await daemonLog.close();
    rmSync(socketDir, { recursive: true, force: true });
    throw error;
  }
  port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  const origin = `http://127.0.0.1:${port}`;
  const oneTimeUrl = (): string => `${origin}/#code=${codes.issue()}`;
  return {
    url: `${origin}/#token=${token}`,
    port,
    token,
    sandboxOrigin: sandbox.origin,
    socketPath,
    daemonLogPath: daemonLog.path,
    client,
    pages: () => bridge.size,
    oneTimeUrl,
    openPage: async () => {
      await openExternal(oneTimeUrl());
      log("opened the page in the browser with a one-time code");
    },
    close() {
      closing ??= (async () => {
        bridge.close();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await sandbox.close();
        await client.close();
        await daemonLog.close();
        rmSync(socketDir, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
}

function answer(response: ServerResponse, status: number, text: string): void {
  response.writeHead(status, {
    "Content-Type": "text/plain; charset=utf-8",
    "Content-Length": Buffer.byteLength(text),
    ...securityHeaders(""),
  });
  response.end(text);
}

async function readBody(request: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** One field of a JSON object body, or `undefined`. */
function field(body: string, name: string): unknown {
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === "object" && parsed !== null ? (parsed as { [key: string]: unknown })[name] : undefined;
  } catch {
    return undefined;
  }
}
