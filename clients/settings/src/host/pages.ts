// The page's files (built by `scripts/bundle.mjs` into dist/page), served from memory with headers that keep the
// page to itself: its own scripts only (no 'unsafe-eval': the client's validators are compiled when it is built), no
// framing of it, frames only from the MCP Apps sandbox's relay origin (its URL written into the page), no referrer (the token is
// in the URL's fragment, which is never sent, but the rule costs nothing).
import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";

const PAGE_DIR = new URL("../../page/", import.meta.url);
const FILES: { readonly [path: string]: { readonly file: string; readonly type: string } } = {
  "/": { file: "index.html", type: "text/html; charset=utf-8" },
  "/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
  "/app.css": { file: "app.css", type: "text/css; charset=utf-8" },
};

/** The page's files, read once, the MCP Apps sandbox's URL written into its HTML. */
export class PageFiles {
  private readonly bodies = new Map<string, Buffer>();
  private readonly sandboxOrigin: string;

  constructor(sandboxUrl: string, directory: URL = PAGE_DIR) {
    this.sandboxOrigin = new URL(sandboxUrl).origin;
    for (const [path, { file }] of Object.entries(FILES)) {
      const body = readFileSync(new URL(file, directory));
      this.bodies.set(path, path === "/" ? Buffer.from(body.toString("utf8").replace("%SANDBOX_URL%", sandboxUrl)) : body);
    }
  }

  /** Answer a GET for one of the page's files; false when the path is not one. */
  serve(request: IncomingMessage, response: ServerResponse, path: string): boolean {
    const body = this.bodies.get(path);
    const entry = FILES[path];
    if (body === undefined || entry === undefined) return false;
    response.writeHead(200, {
      "Content-Type": entry.type,
      "Content-Length": body.length,
      ...securityHeaders(request.headers.host ?? "", this.sandboxOrigin),
    });
    response.end(request.method === "HEAD" ? undefined : body);
    return true;
  }
}

/** Headers on every answer: the page may run its own code, talk to its own host and frame the sandbox, nothing else. */
export function securityHeaders(host: string, sandboxOrigin?: string): { readonly [name: string]: string } {
  const policy = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `connect-src 'self' ws://${host}`,
    "img-src 'none'",
    sandboxOrigin === undefined ? "frame-src 'none'" : `frame-src ${sandboxOrigin}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  return {
    "Content-Security-Policy": policy,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
  };
}
