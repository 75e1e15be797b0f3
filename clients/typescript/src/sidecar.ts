// The Node side of `AppServerClient.spawn`: the daemon as a child process speaking JSON lines on its stdio, and where
// its stderr goes. Loaded only by `spawn`, so the rest of the package runs where Node's modules do not (a renderer).
import { spawn } from "node:child_process";
import { createWriteStream, openSync } from "node:fs";
import { lineReader } from "./rpc/transport.js";
import type { LineOptions, Transport, TransportClosed, TransportReceiver } from "./rpc/transport.js";

/** A stream the sidecar's stderr is written to: a Node writable (a log file's `fs.WriteStream`, `process.stderr`). */
export interface StderrStream {
  write(chunk: Uint8Array): unknown;
}

/** How the sidecar is started. */
export interface SidecarOptions extends LineOptions {
  /** Passed as `--data-dir`. */
  readonly dataDir?: string | undefined;
  /** Variables set for the sidecar on top of this process's environment (`undefined` removes one). */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined;
  /** The sidecar's working directory. */
  readonly cwd?: string | undefined;
  /** How long `close` waits for the sidecar to exit after stdin EOF before killing it (default 10 s). */
  readonly closeTimeoutMs?: number | undefined;
  /**
   * Where the sidecar's stderr (its JSON log lines) goes, besides the tail the client keeps for `exit`: a file path
   * (appended, created 0600; opened by `spawn`, closed by `close`) or a stream the host owns (never ended by the
   * client). Every sidecar a restart starts writes to the same destination.
   */
  readonly stderr?: string | StderrStream | undefined;
}

/** A transport that owns a sidecar process. */
export interface SidecarTransport extends Transport {
  /** The sidecar's process id (undefined if it could not be started). */
  readonly pid: number | undefined;
}

/** The destination of every sidecar's stderr, for the life of one client. */
export interface StderrSink {
  write(chunk: Uint8Array): void;
  /** Flush and close a file the client opened (a host's stream is left open). */
  close(): Promise<void>;
}

const STDERR_TAIL_CHARS = 8192;
const DEFAULT_CLOSE_TIMEOUT_MS = 10_000;

/** Open `destination` (a path is opened now, so that a bad one fails `spawn`); write errors go to `report`. */
export function openStderr(destination: string | StderrStream, report: (error: Error) => void): StderrSink {
  if (typeof destination !== "string") {
    return {
      write(chunk) {
        try {
          destination.write(chunk);
        } catch (error) {
          report(error instanceof Error ? error : new Error(String(error)));
        }
      },
      close: () => Promise.resolve(),
    };
  }
  const file = createWriteStream(destination, { fd: openSync(destination, "a", 0o600) });
  let failed = false;
  file.on("error", (error) => {
    failed = true;
    report(new Error(`the sidecar's stderr cannot be written to ${destination}: ${error.message}`));
  });
  return {
    write(chunk) {
      if (!failed) file.write(chunk);
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (failed || file.destroyed) resolve();
        else file.end(() => resolve());
      }),
  };
}

/** Start `command args… [--data-dir DIR]` and speak JSON lines on its stdio. */
export function startSidecar(
  command: string,
  args: readonly string[],
  options: SidecarOptions,
  stderr?: StderrSink,
): SidecarTransport {
  const argv = options.dataDir === undefined ? [...args] : [...args, "--data-dir", options.dataDir];
  const child = spawn(command, argv, {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, ...options.env },
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  let stderrTail = "";
  const stderrText = new TextDecoder();
  child.stderr.on("data", (chunk: Uint8Array) => {
    stderr?.write(chunk);
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
      const lines = lineReader(to, options);
      child.stdout.on("data", (chunk: Uint8Array) => lines.push(chunk));
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
