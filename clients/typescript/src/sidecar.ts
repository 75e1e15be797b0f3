// The Node side of `AppServerClient.spawn`: the daemon as a child process speaking JSON lines on its stdio. Loaded
// only by `spawn`, so the rest of the package runs where Node's modules do not (an Electron renderer, say).
import { spawn } from "node:child_process";
import { LineSplitter } from "./transport.js";
import type { Transport, TransportClosed, TransportReceiver } from "./transport.js";

/** How the sidecar is started. */
export interface SidecarOptions {
  /** Passed as `--data-dir`. */
  readonly dataDir?: string | undefined;
  /** Variables set for the sidecar on top of this process's environment (`undefined` removes one). */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined;
  /** The sidecar's working directory. */
  readonly cwd?: string | undefined;
  /** How long `close` waits for the sidecar to exit after stdin EOF before killing it (default 10 s). */
  readonly closeTimeoutMs?: number | undefined;
}

/** A transport that owns a sidecar process. */
export interface SidecarTransport extends Transport {
  /** The sidecar's process id (undefined if it could not be started). */
  readonly pid: number | undefined;
}

const STDERR_TAIL_CHARS = 8192;
const DEFAULT_CLOSE_TIMEOUT_MS = 10_000;

/** Start `command args… [--data-dir DIR]` and speak JSON lines on its stdio. */
export function startSidecar(command: string, args: readonly string[], options: SidecarOptions): SidecarTransport {
  const argv = options.dataDir === undefined ? [...args] : [...args, "--data-dir", options.dataDir];
  const child = spawn(command, argv, {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, ...options.env },
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  let stderrTail = "";
  const stderrText = new TextDecoder();
  child.stderr.on("data", (chunk: Uint8Array) => {
    stderrTail = (stderrTail + stderrText.decode(chunk, { stream: true })).slice(-STDERR_TAIL_CHARS);
  });
  child.stdin.on("error", () => {}); // EPIPE once the sidecar is gone: its exit is reported by "close"

  let receiver: TransportReceiver | undefined;
  let closedInfo: TransportClosed | undefined;
  let spawnError: Error | undefined;
  const waiting: Array<() => void> = [];
  const finish = (info: TransportClosed): void => {
    if (closedInfo !== undefined) return;
    closedInfo = info;
    receiver?.closed(info);
    for (const resolve of waiting.splice(0)) resolve();
  };
  child.on("error", (error) => {
    spawnError = error;
    if (child.pid === undefined) finish({ code: null, signal: null, stderrTail, error });
  });
  child.on("close", (code, signal) => {
    const info = { code, signal, stderrTail };
    finish(spawnError === undefined ? info : { ...info, error: spawnError });
  });

  return {
    pid: child.pid,
    start(to) {
      receiver = to;
      const lines = new LineSplitter();
      child.stdout.on("data", (chunk: Uint8Array) => {
        for (const line of lines.push(chunk)) to.message(line);
      });
      if (closedInfo !== undefined) to.closed(closedInfo);
    },
    send(text) {
      if (closedInfo === undefined && child.stdin.writable) child.stdin.write(`${text}\n`);
    },
    close() {
      if (closedInfo !== undefined) return Promise.resolve();
      child.stdin.end();
      const killer = setTimeout(() => child.kill("SIGKILL"), options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS);
      return new Promise<void>((resolve) => waiting.push(resolve)).finally(() => clearTimeout(killer));
    },
  };
}
