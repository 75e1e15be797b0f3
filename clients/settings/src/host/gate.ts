// Who may talk to the host: only the page it served, on loopback, holding this run's token. Every HTTP request is
// checked for its Host header (a DNS-rebinding page names another host), every request that acts (the bridge,
// opening the browser) also for its Origin and the token, and the trade of a one-time code for the token for its
// Origin (the code stands in for the token there).
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { BrowserSessions } from "./sessions.js";

/** The loopback names the page may be loaded under; the URL the host prints uses the first. */
const LOOPBACK_NAMES = ["127.0.0.1", "localhost"] as const;

/** A fresh token: 32 random bytes, hex. */
export function newToken(): string {
  return randomBytes(32).toString("hex");
}

/** Why a request was refused, said in the HTTP status the host answers with. */
export type Refusal = { readonly status: 403 | 421; readonly reason: string };

/** The checks for one run: its port and its token. */
export class Gate {
  private readonly token: Buffer;

  constructor(
    token: string,
    private readonly port: () => number,
    /** Sessions traded for one-time codes: their tokens are good from their own browser only. */
    private readonly sessions?: BrowserSessions,
  ) {
    this.token = Buffer.from(token, "utf8");
  }

  /** The Host header names this listener on loopback (else the page was reached under another name: refused). */
  hostRefusal(request: IncomingMessage): Refusal | undefined {
    const host = request.headers.host;
    if (host !== undefined && this.loopbackHosts().includes(host)) return undefined;
    return { status: 421, reason: "the Host header does not name this loopback listener" };
  }

  /** Host and Origin: the request comes from the page this host served (another site's page is refused). */
  originRefusal(request: IncomingMessage): Refusal | undefined {
    const host = this.hostRefusal(request);
    if (host !== undefined) return host;
    const origin = request.headers.origin;
    if (origin === undefined || origin !== `http://${request.headers.host}`) {
      return { status: 403, reason: "the Origin is not the settings page" };
    }
    return undefined;
  }

  /** Host, Origin and token, for a request that acts: the bridge's upgrade or a host call. */
  refusal(request: IncomingMessage, token: string | null | undefined): Refusal | undefined {
    const origin = this.originRefusal(request);
    if (origin !== undefined) return origin;
    const session = typeof token === "string" && this.sessions?.accepts(token, request) === true;
    if (!session && !this.tokenMatches(token)) return { status: 403, reason: "the token is missing or wrong" };
    return undefined;
  }

  private tokenMatches(token: string | null | undefined): boolean {
    if (typeof token !== "string") return false;
    const given = Buffer.from(token, "utf8");
    return given.length === this.token.length && timingSafeEqual(given, this.token);
  }

  private loopbackHosts(): string[] {
    return LOOPBACK_NAMES.map((name) => `${name}:${this.port()}`);
  }
}
