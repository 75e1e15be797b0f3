// The sidecar's restart policy: when a crashed sidecar is started again, with backoff, and when a run counts as stable.
import type { Transport } from "./rpc/transport.js";

/** When and how often a crashed sidecar is started again. */
export interface RestartPolicy {
  /** The first delay before a restart (default 250 ms); it doubles with each failed attempt. */
  readonly initialDelayMs?: number;
  /** The longest delay (default 8 s). */
  readonly maxDelayMs?: number;
  /** Consecutive restarts to try before giving up (default 10); a sidecar that ran 30 s resets the count. */
  readonly maxAttempts?: number;
}

/** How long a sidecar must have run for its end to start the attempt count afresh. */
const STABLE_MS = 30_000;

/** Starts sidecars again after they end, with doubling delays, until it is stopped or runs out of attempts. */
export class Supervisor {
  private readonly policy: Required<RestartPolicy>;
  private attempts = 0;
  private linkSince = Date.now();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  /** Made just before the first sidecar starts, so its run is timed from its start. */
  constructor(
    private readonly launch: () => Transport,
    policy: RestartPolicy = {},
  ) {
    this.policy = {
      initialDelayMs: policy.initialDelayMs ?? 250,
      maxDelayMs: policy.maxDelayMs ?? 8_000,
      maxAttempts: policy.maxAttempts ?? 10,
    };
  }

  /** The sidecar ended: whether a restart is due (a run of `STABLE_MS` or more resets the attempt count first). */
  shouldRestart(): boolean {
    if (Date.now() - this.linkSince >= STABLE_MS) this.attempts = 0;
    return !this.stopped && this.attempts < this.policy.maxAttempts;
  }

  /** Start the next sidecar after this attempt's delay and hand it to `relaunched`, unless stopped first. */
  schedule(relaunched: (transport: Transport) => void): void {
    const delay = Math.min(this.policy.maxDelayMs, this.policy.initialDelayMs * 2 ** this.attempts);
    this.attempts += 1;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.stopped) return;
      const transport = this.launch();
      this.linkSince = Date.now();
      relaunched(transport);
    }, delay);
  }

  /** No restart from now on (the client is closing). */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
