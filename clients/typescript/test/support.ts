// What the tests share: where the checkout's daemon and fixture servers are, and bounded waits (never sleeps).
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { AppServerClient } from "mcp-app-server-client";
import type { EventName, EventPayload, McpServerConfig, SpawnOptions } from "mcp-app-server-client";

function findRoot(from: string): string {
  let dir = from;
  while (!existsSync(join(dir, "pyproject.toml"))) {
    const up = dirname(dir);
    if (up === dir) throw new Error("not inside the mcp-app-server checkout");
    dir = up;
  }
  return dir;
}

/** The checkout: the daemon runs from its `.venv`, the fixture servers from `scripts/smoke/fixtures`. */
export const ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));
export const PYTHON = process.env.MCP_APP_SERVER_PYTHON ?? join(ROOT, ".venv", "bin", "python");
export const FIXTURES = join(ROOT, "scripts", "smoke", "fixtures");
export const WAIT_MS = 20_000;

const made: string[] = [];
process.on("exit", () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A fresh temporary directory, removed when the test process exits. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "mcp-app-server-client-"));
  made.push(dir);
  return dir;
}

/** A fresh data dir. */
export function dataDir(): string {
  return tempDir();
}

/** The SDK fixture server as a stdio config (its tools: echo, progress, sleep, ask, ...). */
export function fixtureConfig(...args: string[]): McpServerConfig {
  return { command: PYTHON, args: [join(FIXTURES, "fixture_server.py"), ...args] };
}

/** Items in the order they arrived, and bounded waits for the one a test looks for (already seen or to come). */
export class Arrivals<T> {
  readonly items: T[] = [];
  private readonly waiting = new Set<() => void>();

  push(item: T): void {
    this.items.push(item);
    for (const wake of [...this.waiting]) wake();
  }

  /** What `take` finds among the items (it may remove it), as soon as it finds something, within `WAIT_MS`. */
  wait<R>(take: (items: T[]) => R | undefined, what: string): Promise<R> {
    return new Promise((resolve, reject) => {
      const look = (): boolean => {
        const found = take(this.items);
        if (found === undefined) return false;
        cleanup();
        resolve(found);
        return true;
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`${what} within ${WAIT_MS} ms`));
      }, WAIT_MS);
      const wake = (): void => void look();
      const cleanup = (): void => {
        clearTimeout(timer);
        this.waiting.delete(wake);
      };
      if (!look()) this.waiting.add(wake);
    });
  }
}

type Line = { direction: "in" | "out"; message: { [key: string]: unknown } };

/** Every message in and out, as the client's `trace` option reports them. */
export class Trace {
  private readonly arrivals = new Arrivals<Line>();

  get lines(): readonly Line[] {
    return this.arrivals.items;
  }

  readonly record = (direction: "in" | "out", text: string): void => {
    this.arrivals.push({ direction, message: JSON.parse(text) as { [key: string]: unknown } });
  };

  /** The first message (from now on or already seen) that matches, within `WAIT_MS`. */
  find(
    direction: "in" | "out",
    match: (message: { [key: string]: unknown }) => boolean,
  ): Promise<{ [key: string]: unknown }> {
    return this.arrivals.wait(
      (lines) => lines.find((line) => line.direction === direction && match(line.message))?.message,
      `no ${direction} message matched`,
    );
  }
}

/** The daemon of this checkout, spawned as a sidecar with a fresh data dir. */
export function spawnDaemon(options: SpawnOptions = {}): Promise<AppServerClient> {
  return AppServerClient.spawn(PYTHON, ["-m", "app_server"], { dataDir: dataDir(), cwd: ROOT, ...options });
}

/** The next `event` whose payload matches, within `WAIT_MS`. */
export function nextEvent<E extends EventName>(
  client: AppServerClient,
  event: E,
  match: (payload: EventPayload<E>) => boolean = () => true,
): Promise<EventPayload<E>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no ${event} within ${WAIT_MS} ms`));
    }, WAIT_MS);
    const off = client.on(event, (payload) => {
      if (!match(payload)) return;
      clearTimeout(timer);
      off();
      resolve(payload);
    });
  });
}
