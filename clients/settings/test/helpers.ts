// What the host tests share: the checkout's daemon, a plain HTTP request to the host, and a bounded wait.
import { request } from "node:http";
import { join, resolve } from "node:path";

const ROOT = resolve(new URL("../../../../", import.meta.url).pathname);
/** The daemon of this checkout, as `startHost` and `--daemon-command` take it. */
export const DAEMON_COMMAND: readonly string[] = [join(ROOT, ".venv", "bin", "python"), "-m", "app_server"];
/** The host's command line entry point, built next to this file. */
export const MAIN_JS = resolve(new URL("../src/host/main.js", import.meta.url).pathname);

/** An answer of the host: its status and body. */
export interface Answer {
  readonly status: number;
  readonly body: string;
  readonly headers: import("node:http").IncomingHttpHeaders;
}

/** One HTTP request to the host on loopback. */
export function httpRequest(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Answer> {
  return new Promise((resolveAnswer, reject) => {
    const sent = request({ host: "127.0.0.1", port, path, method, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () =>
        resolveAnswer({
          status: response.statusCode ?? 0,
          body: Buffer.concat(chunks).toString("utf8"),
          headers: response.headers,
        }),
      );
    });
    sent.once("error", reject);
    sent.end(body);
  });
}

/** Wait (at most `ms`) until `condition` holds. */
export async function waitFor(condition: () => boolean, ms = 5000, what = "condition"): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((resolveTick) => setImmediate(resolveTick));
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what} not met in ${ms / 1000} s`);
    await new Promise((resolveTick) => setTimeout(resolveTick, 10));
  }
}
