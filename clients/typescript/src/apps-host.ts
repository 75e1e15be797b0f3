// mcp-app-server-client/apps-host (Node): the MCP Apps sandbox a host serves next to its page (SPEC §13), so that
// no view ever shares an origin with the page, with another server's view, or with the relay that frames it. One
// loopback port, three kinds of document: the relay on `http://127.0.0.1:<port>`, and each view on its own
// `http://<label>.localhost:<port>` (one label per server, see `viewLabel`), with the view's declared origins as its
// Content-Security-Policy header. Each document needs this run's token; no request can end the host.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { VIEW_LABEL } from "./apps/frame.js";
import { frameAncestorSources, relayPolicy, viewPolicy } from "./apps/policy.js";
import type { ViewCsp } from "./apps/policy.js";

export { cspOrigin, cspOrigins } from "./apps/origins.js";
export { relayPolicy, viewPolicy } from "./apps/policy.js";
export type { ViewCsp } from "./apps/policy.js";

const DIST = new URL("./", import.meta.url);
const MAX_URL_BYTES = 16 * 1024;
/** The relay's document: `?token=&page=<page origin>&view=<label>&csp=<JSON of _meta.ui.csp>`. */
export const RELAY_PATH = "/relay.html";
/** A view's document, on the view's own origin: `?token=&relay=<relay origin>&csp=<JSON>`. */
export const VIEW_PATH = "/view.html";
/** The scripts the two documents load (ES modules, as built), by the path they are served at. */
const SCRIPTS: { readonly [path: string]: string } = {
  "/apps/relay.js": "apps/relay.js",
  "/apps/view-boot.js": "apps/view-boot.js",
  "/apps/frame.js": "apps/frame.js",
  "/generated/protocol.js": "generated/protocol.js",
};
const COMMON_HEADERS = {
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  // A view cannot relax its origin with `document.domain` to reach another `*.localhost` view.
  "Origin-Agent-Cluster": "?1",
};

/** How to start a sandbox. */
export interface AppsSandboxOptions {
  /** The origins the host's page is served from (`http://127.0.0.1:5173`, `app://host`): only they may frame the
   * sandbox and talk to its relay. A function is read per request (a page listener that starts later). */
  readonly pageOrigins: readonly string[] | (() => readonly string[]);
  /** The loopback port (0, the default: a free one). */
  readonly port?: number | undefined;
  /** Where a refused or failed request is noted (default: nowhere). */
  readonly log?: ((line: string) => void) | undefined;
}

/** A running sandbox: hand `url` to the page (`mountAppView`'s `sandbox`). */
export class AppsSandbox {
  private readonly token = randomBytes(24).toString("hex");
  private readonly scripts = new Map<string, Buffer>();
  private port = 0;

  private constructor(
    private readonly server: Server,
    private readonly options: AppsSandboxOptions,
  ) {
    for (const [path, file] of Object.entries(SCRIPTS)) this.scripts.set(path, readFileSync(new URL(file, DIST)));
  }

  /** Listen on loopback; resolves once serving. */
  static async start(options: AppsSandboxOptions): Promise<AppsSandbox> {
    const server = createServer();
    const sandbox = new AppsSandbox(server, options);
    server.on("request", (request: IncomingMessage, response: ServerResponse) => sandbox.answer(request, response));
    server.on("clientError", (_error, socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port ?? 0, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
    sandbox.port = (server.address() as AddressInfo).port;
    return sandbox;
  }

  /** The relay's origin, `http://127.0.0.1:<port>` (what the page's `frame-src` names). */
  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** What the page needs to mount views: the relay's URL with this run's token. */
  get url(): string {
    return `${this.origin}${RELAY_PATH}?token=${this.token}`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** Every request is answered or dropped here; nothing it carries can throw out of the listener. */
  private answer(request: IncomingMessage, response: ServerResponse): void {
    try {
      this.handle(request, response);
    } catch (error) {
      this.options.log?.(`apps sandbox: ${error instanceof Error ? error.message : String(error)}`);
      if (!response.headersSent) plain(response, 500, "the sandbox could not answer this request");
      else response.destroy();
    }
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    if (request.method !== "GET" && request.method !== "HEAD") return plain(response, 405, "only GET");
    if ((request.url ?? "").length > MAX_URL_BYTES) return plain(response, 414, "the URL is too long");
    const place = this.place(request.headers.host);
    if (place === undefined) return plain(response, 421, "the Host header names no place of this sandbox");
    const url = new URL(request.url ?? "/", this.origin);
    const script = this.scripts.get(url.pathname);
    if (script !== undefined) return this.send(request, response, "text/javascript; charset=utf-8", script, {});
    const expected = place === "relay" ? RELAY_PATH : VIEW_PATH;
    if (url.pathname !== expected) return plain(response, 404, "not a document of this sandbox");
    if (!this.tokenMatches(url.searchParams.get("token"))) return plain(response, 403, "the token is missing or wrong");
    const destination = request.headers["sec-fetch-dest"];
    if (destination !== undefined && destination !== "iframe") return plain(response, 403, "only framed");
    let csp: ViewCsp | undefined;
    try {
      const parsed: unknown = JSON.parse(url.searchParams.get("csp") ?? "null");
      csp = typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as ViewCsp) : undefined;
    } catch {
      return plain(response, 400, "csp is not JSON");
    }
    const pages = frameAncestorSources(this.pageOrigins());
    if (place === "relay") {
      const label = url.searchParams.get("view") ?? "";
      if (!VIEW_LABEL.test(label)) return plain(response, 400, "view is not a view label");
      const body =
        '<!doctype html><html><head><meta charset="utf-8">' +
        `<meta name="page-origins" content="${pages.join(" ")}">` +
        "<style>html,body{margin:0;height:100%;overflow:hidden}iframe{border:0;width:100%;height:100%;display:block}</style>" +
        '<script type="module" src="/apps/relay.js"></script></head><body></body></html>';
      const viewOrigin = `http://${label}.localhost:${this.port}`;
      return this.send(request, response, "text/html; charset=utf-8", Buffer.from(body), {
        "Content-Security-Policy": relayPolicy(viewOrigin, pages),
      });
    }
    if (url.searchParams.get("relay") !== this.origin) return plain(response, 400, "relay is not this sandbox's");
    const body = '<!doctype html><html><head><meta charset="utf-8"><script type="module" src="/apps/view-boot.js"></script></head></html>';
    return this.send(request, response, "text/html; charset=utf-8", Buffer.from(body), {
      "Content-Security-Policy": viewPolicy(csp, [this.origin, ...pages]),
    });
  }

  /** Which document a Host header may ask for: the relay's (`127.0.0.1:<port>`) or a view's (`<label>.localhost`). */
  private place(host: string | undefined): "relay" | "view" | undefined {
    if (host === `127.0.0.1:${this.port}`) return "relay";
    const match = /^([a-z0-9]+)\.localhost:([0-9]+)$/.exec(host ?? "");
    return match !== null && VIEW_LABEL.test(match[1] ?? "") && match[2] === String(this.port) ? "view" : undefined;
  }

  private pageOrigins(): readonly string[] {
    const { pageOrigins } = this.options;
    return typeof pageOrigins === "function" ? pageOrigins() : pageOrigins;
  }

  private tokenMatches(given: string | null): boolean {
    if (given === null) return false;
    const a = Buffer.from(given, "utf8");
    const b = Buffer.from(this.token, "utf8");
    return a.length === b.length && timingSafeEqual(a, b);
  }

  private send(
    request: IncomingMessage,
    response: ServerResponse,
    type: string,
    body: Buffer,
    headers: { readonly [name: string]: string },
  ): void {
    response.writeHead(200, { ...COMMON_HEADERS, ...headers, "Content-Type": type, "Content-Length": body.length });
    response.end(request.method === "HEAD" ? undefined : body);
  }
}

function plain(response: ServerResponse, status: number, text: string): void {
  response.writeHead(status, { ...COMMON_HEADERS, "Content-Type": "text/plain; charset=utf-8", "Content-Length": Buffer.byteLength(text) });
  response.end(text);
}
