// Where the daemon's stderr (its JSON log lines) goes: a file in its data dir, so the reason a server failed to start
// can be read after the fact. The data dir is known only once the daemon has answered `initialize`, so lines written
// before that wait here (bounded) and are appended first.
import { createWriteStream } from "node:fs";
import type { WriteStream } from "node:fs";
import { join } from "node:path";

/** The log file's name inside the daemon's data dir. */
export const DAEMON_LOG_FILE = "settings-daemon.log";
const MAX_EARLY_BYTES = 1024 * 1024;

/** A stderr destination for `AppServerClient.spawn` that holds the first lines until `open` names the file. */
export class DaemonLog {
  private file: WriteStream | undefined;
  private early: Uint8Array[] = [];
  private earlyBytes = 0;
  /** The file's path once opened. */
  path: string | undefined;

  write(chunk: Uint8Array): void {
    if (this.file !== undefined) {
      this.file.write(chunk);
    } else if (this.earlyBytes + chunk.byteLength <= MAX_EARLY_BYTES) {
      this.early.push(chunk);
      this.earlyBytes += chunk.byteLength;
    }
  }

  /** Append from now on to `<dataDir>/settings-daemon.log` (created 0600), the held lines first. */
  open(dataDir: string): string {
    const path = join(dataDir, DAEMON_LOG_FILE);
    this.file = createWriteStream(path, { flags: "a", mode: 0o600 });
    this.file.on("error", () => {
      this.file = undefined;
    });
    for (const chunk of this.early) this.file.write(chunk);
    this.early = [];
    this.path = path;
    return path;
  }

  /** Flush and close the file. */
  close(): Promise<void> {
    const file = this.file;
    this.file = undefined;
    if (file === undefined) return Promise.resolve();
    return new Promise((resolve) => file.end(() => resolve()));
  }
}
