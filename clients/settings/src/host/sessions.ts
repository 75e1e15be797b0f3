// The browsers a one-time code may open the page in (SPEC §12's `--open`): the first load of the page sets a nonce
// cookie, a code is traded only by a browser holding one, and the session it opens (a token of its own) is good only
// with that browser's cookie. A code that comes back as already used from another browser ends the session it
// opened: whoever traded it first (a program that read the code from a process list) loses it when the person's
// browser comes with the same code. The same browser opening the link twice keeps its session.
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** The cookie that names a browser which loaded the page. */
export const NONCE_COOKIE = "mcp-settings-browser";
/** The most browsers (nonces) and sessions remembered; the oldest are forgotten first. */
const MAX_ENTRIES = 64;

/** This run's browser nonces and the sessions traded for codes, each bound to its browser. */
export class BrowserSessions {
  private readonly nonces = new Set<string>();
  /** Session token → the nonce of the browser that traded the code. */
  private readonly sessions = new Map<string, string>();

  /** The `Set-Cookie` header for a page load whose browser has no nonce of this run yet, else `undefined`. */
  cookieFor(request: IncomingMessage): string | undefined {
    if (this.nonceOf(request) !== undefined) return undefined;
    const nonce = randomBytes(24).toString("hex");
    remember(this.nonces, nonce);
    return `${NONCE_COOKIE}=${nonce}; HttpOnly; SameSite=Strict; Path=/`;
  }

  /** The nonce of this run the request's browser holds, if any. */
  nonceOf(request: IncomingMessage): string | undefined {
    const header = request.headers.cookie ?? "";
    for (const part of header.split(";")) {
      const [name, value] = part.trim().split("=", 2);
      if (name === NONCE_COOKIE && value !== undefined && this.nonces.has(value)) return value;
    }
    return undefined;
  }

  /** A new session for the browser of `nonce`: the token the page uses from now on. */
  open(nonce: string): string {
    const token = randomBytes(32).toString("hex");
    if (this.sessions.size >= MAX_ENTRIES) this.sessions.delete(this.sessions.keys().next().value as string);
    this.sessions.set(token, nonce);
    return token;
  }

  /** `token` is a live session and the request comes from the browser it was opened for. */
  accepts(token: string, request: IncomingMessage): boolean {
    const nonce = this.sessions.get(token);
    const held = this.nonceOf(request);
    if (nonce === undefined || held === undefined) return false;
    return held.length === nonce.length && timingSafeEqual(Buffer.from(nonce), Buffer.from(held));
  }

  /** The nonce of the browser `token`'s session was opened for. */
  browserOf(token: string): string | undefined {
    return this.sessions.get(token);
  }

  /** End a session: its token is refused from now on. */
  end(token: string): void {
    this.sessions.delete(token);
  }
}

function remember(set: Set<string>, value: string): void {
  if (set.size >= MAX_ENTRIES) set.delete(set.values().next().value as string);
  set.add(value);
}
