// Opening a URL in the user's browser, the way a desktop host does for an OAuth login (Electron's
// `shell.openExternal`, Tauri's `opener`): only http(s) URLs, never a file or a custom scheme a page could choose.
import { spawn } from "node:child_process";

/** What the host calls to open a URL outside the page: the system browser, or a test's driver. */
export type OpenExternal = (url: string) => void | Promise<void>;

/** The URL as an http(s) URL, or `undefined` for anything else. */
export function externalUrl(text: unknown): URL | undefined {
  if (typeof text !== "string" || text.length > 8192) return undefined;
  try {
    const url = new URL(text);
    return url.protocol === "https:" || url.protocol === "http:" ? url : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The system browser: `open` on macOS, `xdg-open` elsewhere (Linux desktops), started detached. The URL becomes
 * part of that process's command line, which every local user can read: never hand it a secret (the page itself
 * is opened with a one-time code, `Host.openPage`).
 */
export const openInSystemBrowser: OpenExternal = (url) => {
  const command = process.platform === "darwin" ? "open" : "xdg-open";
  return new Promise<void>((resolve, reject) => {
    const child = spawn(command, [url], { stdio: "ignore", detached: true });
    child.once("error", (error) => reject(new Error(`${command} could not be started: ${error.message}`)));
    child.once("spawn", () => {
      child.unref();
      resolve();
    });
  });
};
