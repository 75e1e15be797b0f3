#!/usr/bin/env node
// `mcp-app-server-settings`: start the daemon and serve the settings page; prints the page's URL (with this run's
// token) and runs until Ctrl-C.
import { parseArgs } from "node:util";
import { startHost } from "./host.js";

const USAGE = `usage: mcp-app-server-settings [--data-dir DIR] [--daemon-command JSON] [--port N] [--open]

  --data-dir DIR         the daemon's data dir (default: the daemon's own default, the user's data dir)
  --daemon-command JSON  the daemon's argv as a JSON list (default: ["mcp-app-server"])
  --port N               the loopback port to serve on (default: a free one)
  --open                 also open the page in the system browser (with a one-time code, never the token)`;

function daemonCommand(text: string | undefined): string[] {
  if (text === undefined) return ["mcp-app-server"];
  const argv: unknown = JSON.parse(text);
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((part) => typeof part === "string" && part !== "")) {
    throw new Error("--daemon-command takes a JSON list of non-empty strings");
  }
  return argv as string[];
}

async function main(): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        "data-dir": { type: "string" },
        "daemon-command": { type: "string" },
        port: { type: "string" },
        open: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`--port takes a port number\n${USAGE}\n`);
    return 2;
  }
  let command: string[];
  try {
    command = daemonCommand(values["daemon-command"]);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return 2;
  }
  const host = await startHost({ daemonCommand: command, dataDir: values["data-dir"], port });
  const dataDir = host.client.initializeResult?.dataDir ?? "?";
  const logLine = host.daemonLogPath === undefined ? "" : `  daemon log: ${host.daemonLogPath}\n`;
  process.stdout.write(`mcp-app-server settings: ${host.url}\n  data dir: ${dataDir}\n${logLine}  Ctrl-C stops it.\n`);
  if (values.open) await host.openPage();
  let stopping = false;
  const stopped = new Promise<number>((resolve) => {
    const stop = (): void => {
      stopping = true;
      host.close().then(
        () => resolve(0),
        () => resolve(1),
      );
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    process.once("SIGHUP", stop);
    host.client.closed.then(() => {
      if (stopping) return;
      process.stderr.write("the daemon is gone and was not restarted; stopping\n");
      host.close().then(
        () => resolve(1),
        () => resolve(1),
      );
    });
  });
  return stopped;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`mcp-app-server-settings: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
