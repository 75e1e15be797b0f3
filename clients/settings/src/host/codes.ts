// One-time codes for opening the page from a command line: `--open` hands the browser `/#code=…`, never the
// session token, because a process's argv is readable by every local user (`/proc/<pid>/cmdline`). The page trades
// the code once for the token; a code read later from a process list is already spent or expired.
import { createHash, randomBytes } from "node:crypto";

/** How long a code may wait for its page (a cold browser start takes a few seconds). */
export const CODE_TTL_MS = 60_000;

/** What a trade of a code found. */
export type Redemption = "ok" | "unknown" | "used" | "expired";

interface Issued {
  readonly expiresAt: number;
  used: boolean;
  /** The session the code was traded for, to end when the code comes back. */
  session?: string;
}

/** The codes of one run: each is good for one trade, within its time. */
export class OneTimeCodes {
  /** By the code's SHA-256, so that a lookup compares digests, never the code itself. */
  private readonly issued = new Map<string, Issued>();

  constructor(
    private readonly ttlMs: number = CODE_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** A fresh code: 32 random bytes, hex. */
  issue(): string {
    this.prune();
    const code = randomBytes(32).toString("hex");
    this.issued.set(digest(code), { expiresAt: this.now() + this.ttlMs, used: false });
    return code;
  }

  /** Spend `code`: `ok` the first time within its time, else why not. A used code stays known until it expires. */
  redeem(code: unknown): Redemption {
    this.prune();
    if (typeof code !== "string" || code.length > 256) return "unknown";
    const entry = this.issued.get(digest(code));
    if (entry === undefined) return "unknown";
    if (entry.used) return "used";
    entry.used = true;
    return this.now() >= entry.expiresAt ? "expired" : "ok";
  }

  /** Remember the session `code` was traded for (`sessionOf` finds it when the code comes back as used). */
  bind(code: string, session: string): void {
    const entry = this.issued.get(digest(code));
    if (entry !== undefined) entry.session = session;
  }

  /** The session `code` was traded for, while the code is remembered. */
  sessionOf(code: unknown): string | undefined {
    return typeof code === "string" && code.length <= 256 ? this.issued.get(digest(code))?.session : undefined;
  }

  /** Forget codes past their time (an expired code is then `unknown`, which is refused the same way). */
  private prune(): void {
    const now = this.now();
    for (const [key, entry] of this.issued) if (now >= entry.expiresAt + this.ttlMs) this.issued.delete(key);
  }
}

function digest(code: string): string {
  return createHash("sha256").update(code, "utf8").digest("hex");
}
