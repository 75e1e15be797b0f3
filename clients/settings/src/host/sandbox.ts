// The MCP Apps sandbox (SPEC §13): the outer frame of the spec's double iframe, served on a loopback port of its own
// so a view never shares an origin with the settings page. It serves one document, the relay (`sandbox.js`, built
// from src/page/sandbox-proxy.ts), with a Content-Security-Policy built from the view's declared `csp` (the page
// passes it in the query, as ext-apps' basic-host does): what the view did not declare it cannot reach.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

const PAGE_DIR = new URL("../../page/", import.meta.url);
/** The sandbox document; `?host=<page origin>&csp=<JSON of the view's _meta.ui.csp>`. */
export const SANDBOX_PATH = "/sandbox.html";
const SCRIPT_PATH = "/sandbox.js";
const MAX_QUERY_BYTES = 16 * 1024;

/** A view's declared origins (`_meta.ui.csp`), as the daemon types them. */
export interface ViewCsp {
  readonly connectDomains?: readonly string[] | undefined;
  readonly resourceDomains?: readonly string[] | undefined;
  readonly frameDomains?: readonly string[] | undefined;
  readonly baseUriDomains?: readonly string[] | undefined;
}

/** A source a directive may name: one token, no quotes, separators or whitespace (no way to add a keyword or a
 * directive), and a scheme a view may load from. */
function sources(domains: unknown): string[] {
  if (!Array.isArray(domains)) return [];
  return domains.filter(
    (entry): entry is string =>
      typeof entry === "string" && entry.length <= 256 && /^(https?|wss?):\/\/[^\s;,'"]+$/.test(entry),
  );
}

/** The view's policy: inline code and its own origin, plus exactly the origins it declared for each kind of load;
 * framed only by the settings page. */
export function viewPolicy(csp: ViewCsp | undefined, pageOrigins: readonly string[]): string {
  const resources = sources(csp?.resourceDomains).join(" ");
  const connect = sources(csp?.connectDomains).join(" ");
  const frames = sources(csp?.frameDomains).join(" ");
  const bases = sources(csp?.baseUriDomains).join(" ");
  return [
    "default-src 'self' 'unsafe-inline'",
    `script-src 'self' 'unsafe-inline' 'unsafe-eval' blob: data: ${resources}`.trim(),
    `style-src 'self' 'unsafe-inline' blob: data: ${resources}`.trim(),
    `img-src 'self' data: blob: ${resources}`.trim(),
    `font-src 'self' data: blob: ${resources}`.trim(),
    `media-src 'self' data: blob: ${resources}`.trim(),
    `connect-src 'self' ${connect}`.trim(),
    `worker-src 'self' blob: ${resources}`.trim(),
    frames === "" ? "frame-src 'none'" : `frame-src ${frames}`,
    "object-src 'none'",
    bases === "" ? "base-uri 'none'" : `base-uri ${bases}`,
    "form-action 'none'",
    `frame-ancestors ${pageOrigins.join(" ")}`,
  ].join("; ");
}

/** The sandbox's listener; its origin differs from the page's by port. */
export class SandboxServer {
  private readonly server: Server;
  private readonly script: Buffer;
  private port = 0;

  /** `pagePort` is read per request: the page's listener starts after this one. */
  constructor(
    private readonly pagePort: () => number,
    directory: URL = PAGE_DIR,
  ) {
    this.script = readFileSync(new URL("sandbox.js", directory));
    this.server = createServer((request, response) => this.handle(request, response));
  }

  /** `http://127.0.0.1:<port>`, once listening. */
  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(0, "127.0.0.1", () => {
        this.server.off("error", reject);
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** The page's origins: the names it may be loaded under on its port. */
  private pageOrigins(): string[] {
    return ["127.0.0.1", "localhost"].map((name) => `http://${name}:${this.pagePort()}`);
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    // A DNS-rebinding page names another host; only GETs of the two files are served.
    if (request.headers.host !== `127.0.0.1:${this.port}`) return plain(response, 421, "wrong Host");
    if (request.method !== "GET" && request.method !== "HEAD") return plain(response, 405, "only GET");
    if ((request.url ?? "").length > MAX_QUERY_BYTES) return plain(response, 414, "the query is too long");
    const url = new URL(request.url ?? "/", this.origin);
    const origins = this.pageOrigins();
    if (url.pathname === SCRIPT_PATH) {
      response.writeHead(200, {
        "Content-Type": "text/javascript; charset=utf-8",
        "Content-Length": this.script.length,
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
      });
      response.end(request.method === "HEAD" ? undefined : this.script);
      return;
    }
    if (url.pathname !== SANDBOX_PATH) return plain(response, 404, "only the sandbox is served here");
    let csp: ViewCsp | undefined;
    try {
      const parsed: unknown = JSON.parse(url.searchParams.get("csp") ?? "null");
      csp = typeof parsed === "object" && parsed !== null ? (parsed as ViewCsp) : undefined;
    } catch {
      return plain(response, 400, "csp is not JSON");
    }
    const body = Buffer.from(
      '<!doctype html><html><head><meta charset="utf-8"><style>html,body{margin:0;height:100%;overflow:hidden}' +
        "iframe{border:0;width:100%;height:100%;display:block}</style></head><body>" +
        `<script src="${SCRIPT_PATH}" data-page-origins="${origins.join(" ")}"></script></body></html>`,
    );
    response.writeHead(200, {
      "Content-Type": "text/html; charset=utf-8",
      "Content-Length": body.length,
      "Content-Security-Policy": viewPolicy(csp, origins),
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff",
      "Referrer-Policy": "no-referrer",
    });
    response.end(request.method === "HEAD" ? undefined : body);
  }
}

function plain(response: ServerResponse, status: number, text: string): void {
  response.writeHead(status, { "Content-Type": "text/plain; charset=utf-8", "Content-Length": Buffer.byteLength(text) });
  response.end(text);
}
