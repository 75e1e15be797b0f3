// mcp-app-server-client/apps-host (Node): the MCP Apps sandbox a host serves next to its page (SPEC §13), so that
// no view ever shares an origin with the page, with another server's view, or with the relay that frames it. The
// relay is served on the sandbox's port; each view label (one per server and declared `_meta.ui.domain`, see
// `viewLabel`) gets a loopback port of its own, on first use, serving that view's HTML (which the relay hands over
// once, by a POST from its own origin) as a real document with the view's declared origins as its
// Content-Security-Policy header. Ports, not `<label>.localhost` names: a view on a port stays
// same-site with the page, so a browser that blocks third-party storage still gives the view its own storage.
// Each document needs this run's token; no request can end the host.
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
/** The most view origins one run serves (one per server and declared domain; a page cannot open ports unbounded). */
export const MAX_VIEW_ORIGINS = 128;
/** The largest view the relay may hand over (the daemon reads views up to 16 MiB), and how much may wait at once. */
const MAX_VIEW_BYTES = 17 * 1024 * 1024;
const MAX_WAITING_BYTES = 64 * 1024 * 1024;
/** How long a handed-over view waits for its frame to load it. */
const VIEW_TTL_MS = 60_000;
/** Where the relay hands a view's HTML over: `POST ?token=&view=<label>`, answered `{"id"}` for `VIEW_PATH`. */
export const VIEWS_PATH = "/views";
/** The relay's document: `?token=&page=<page origin>&view=<label>&csp=<JSON of _meta.ui.csp>`; it names the view's
 * origin in `<meta name="view-origin">`. */
export const RELAY_PATH = "/relay.html";
/** A view's document, on the view's own origin: `?token=&id=<from VIEWS_PATH>&csp=<JSON>`, served once. */
export const VIEW_PATH = "/view.html";
/** The scripts the two documents load (ES modules, as built), by the path they are served at. */
const SCRIPTS: { readonly [path: string]: string } = {
  "/apps/relay.js": "apps/relay.js",
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
  /** Each view label's listener, by label; a pending entry while it starts. */
  private readonly views = new Map<string, Promise<Listening>>();
  /** Views handed over by a relay and not yet loaded, by id. */
  private readonly waiting = new Map<string, Waiting>();
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
    const handle = (request: IncomingMessage, response: ServerResponse): Promise<void> =>
      sandbox.handleRelay(request, response);
    sandbox.port = await listen(server, options.port ?? 0, handle, options.log);
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

  /** The origin of `label`'s views, starting its listener on first use; `undefined` past `MAX_VIEW_ORIGINS`. */
  async viewOrigin(label: string): Promise<string | undefined> {
    if (!VIEW_LABEL.test(label)) return undefined;
    let listening = this.views.get(label);
    if (listening === undefined) {
      if (this.views.size >= MAX_VIEW_ORIGINS) return undefined;
      const server = createServer();
      const handle = (request: IncomingMessage, response: ServerResponse): Promise<void> =>
        this.handleView(request, response, (server.address() as AddressInfo).port);
      listening = listen(server, 0, handle, this.options.log).then((port) => ({ server, port }));
      listening.catch(() => this.views.delete(label));
      this.views.set(label, listening);
    }
    return `http://127.0.0.1:${(await listening).port}`;
  }

  async close(): Promise<void> {
    for (const { timer } of this.waiting.values()) clearTimeout(timer);
    this.waiting.clear();
    const servers = [this.server, ...(await Promise.allSettled(this.views.values())).flatMap((entry) =>
      entry.status === "fulfilled" ? [entry.value.server] : [],
    )];
    await Promise.all(
      servers.map((server) => {
        server.closeAllConnections();
        return new Promise<void>((resolve) => server.close(() => resolve()));
      }),
    );
  }

  /** The relay's port: the relay document (which starts its view's listener), the scripts, and the hand-over. */
  private async handleRelay(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (request.method === "POST") return this.handOver(request, response);
    const url = this.checked(request, response, this.port, RELAY_PATH);
    if (url === undefined) return;
    if (parseCsp(url) === undefined) return plain(response, 400, "csp is not a JSON object");
    const pages = frameAncestorSources(this.pageOrigins());
    const viewOrigin = await this.viewOrigin(url.searchParams.get("view") ?? "");
    if (viewOrigin === undefined) return plain(response, 400, "view is not a view label, or too many views were opened");
    const body =
      '<!doctype html><html><head><meta charset="utf-8">' +
      `<meta name="page-origins" content="${pages.join(" ")}"><meta name="view-origin" content="${viewOrigin}">` +
      "<style>html,body{margin:0;height:100%;overflow:hidden}iframe{border:0;width:100%;height:100%;display:block}</style>" +
      '<script type="module" src="/apps/relay.js"></script></head><body></body></html>';
    return this.send(request, response, "text/html; charset=utf-8", Buffer.from(body), {
      "Content-Security-Policy": relayPolicy(viewOrigin, pages),
    });
  }

  /** A view label's port: the view's document, with its policy, framed by the relay and the page, and the scripts. */
  private async handleView(request: IncomingMessage, response: ServerResponse, port: number): Promise<void> {
    const url = this.checked(request, response, port, VIEW_PATH);
    if (url === undefined) return;
    const csp = parseCsp(url);
    if (csp === undefined) return plain(response, 400, "csp is not a JSON object");
    const id = url.searchParams.get("id") ?? "";
    const view = this.waiting.get(id);
    if (view === undefined || view.port !== port) return plain(response, 404, "no such view is waiting here");
    this.waiting.delete(id);
    clearTimeout(view.timer);
    const pages = frameAncestorSources(this.pageOrigins());
    return this.send(request, response, "text/html; charset=utf-8", view.html, {
      "Content-Security-Policy": viewPolicy(csp, [this.origin, ...pages]),
    });
  }

  /** The relay hands a view's HTML over (from its own origin, with the token): kept once, for a short time. */
  private async handOver(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (request.headers.host !== `127.0.0.1:${this.port}`) return plain(response, 421, "the Host header names another place");
    if (request.headers.origin !== this.origin) return plain(response, 403, "only the relay hands views over");
    const url = new URL(request.url ?? "/", this.origin);
    if (url.pathname !== VIEWS_PATH) return plain(response, 404, "not a place of this sandbox");
    if (!this.tokenMatches(url.searchParams.get("token"))) return plain(response, 403, "the token is missing or wrong");
    const origin = await this.viewOrigin(url.searchParams.get("view") ?? "");
    if (origin === undefined) return plain(response, 400, "view is not a view label, or too many views were opened");
    const html = await readBounded(request, MAX_VIEW_BYTES);
    if (html === undefined) return plain(response, 413, "the view is too large");
    let held = html.length;
    for (const entry of this.waiting.values()) held += entry.html.length;
    if (held > MAX_WAITING_BYTES) return plain(response, 503, "too many views are waiting to load");
    const id = randomBytes(16).toString("hex");
    const timer = setTimeout(() => this.waiting.delete(id), VIEW_TTL_MS);
    timer.unref();
    this.waiting.set(id, { html, port: Number(new URL(origin).port), timer });
    const body = Buffer.from(JSON.stringify({ id }));
    return this.send(request, response, "application/json", body, {});
  }

  /** The checks every request passes: a GET of a bounded URL naming this listener; a script is answered here, a
   * document only with the token and into a frame. The URL of a document request that passed, else `undefined`. */
  private checked(request: IncomingMessage, response: ServerResponse, port: number, document: string): URL | undefined {
    if (request.method !== "GET" && request.method !== "HEAD") return void plain(response, 405, "only GET");
    if ((request.url ?? "").length > MAX_URL_BYTES) return void plain(response, 414, "the URL is too long");
    if (request.headers.host !== `127.0.0.1:${port}`) return void plain(response, 421, "the Host header names another place");
    const url = new URL(request.url ?? "/", `http://127.0.0.1:${port}`);
    const script = this.scripts.get(url.pathname);
    if (script !== undefined) return void this.send(request, response, "text/javascript; charset=utf-8", script, {});
    if (url.pathname !== document) return void plain(response, 404, "not a document of this place");
    if (!this.tokenMatches(url.searchParams.get("token"))) return void plain(response, 403, "the token is missing or wrong");
    const destination = request.headers["sec-fetch-dest"];
    if (destination !== undefined && destination !== "iframe") return void plain(response, 403, "only framed");
    return url;
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

interface Listening {
  readonly server: Server;
  readonly port: number;
}

interface Waiting {
  readonly html: Buffer;
  /** The view origin's port that may serve it. */
  readonly port: number;
  readonly timer: NodeJS.Timeout;
}

/** The request's body, or `undefined` past `limit` bytes (the rest is not read). */
async function readBounded(request: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      request.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The view's declared origins from the query (`{}` when absent); `undefined` when not a JSON object. */
function parseCsp(url: URL): ViewCsp | undefined {
  try {
    const parsed: unknown = JSON.parse(url.searchParams.get("csp") ?? "{}");
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as ViewCsp) : undefined;
  } catch {
    return undefined;
  }
}

/** Serve `handle` on a loopback port; every request is answered or dropped, nothing it carries can throw out. */
function listen(
  server: Server,
  port: number,
  handle: (request: IncomingMessage, response: ServerResponse) => Promise<void>,
  log?: (line: string) => void,
): Promise<number> {
  server.on("request", (request: IncomingMessage, response: ServerResponse) => {
    handle(request, response).catch((error: unknown) => {
      log?.(`apps sandbox: ${error instanceof Error ? error.message : String(error)}`);
      if (!response.headersSent) plain(response, 500, "the sandbox could not answer this request");
      else response.destroy();
    });
  });
  // A request Node cannot parse (a control character in a header, a malformed line) is refused, never thrown.
  server.on("clientError", (_error, socket) => {
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    else socket.destroy();
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function plain(response: ServerResponse, status: number, text: string): void {
  response.writeHead(status, { ...COMMON_HEADERS, "Content-Type": "text/plain; charset=utf-8", "Content-Length": Buffer.byteLength(text) });
  response.end(text);
}
