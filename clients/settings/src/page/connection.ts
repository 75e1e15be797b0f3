// The page's side of the bridge: a `Transport` of the client runtime over a browser WebSocket (one JSON-RPC message
// per text frame), and this run's token: from the URL the host printed (`#token=`), or traded once for the one-time
// code the host opened the browser with (`#code=`); either way then hidden from the address bar.
import { AppServerClient } from "mcp-app-server-client";
import type { Transport, TransportReceiver } from "mcp-app-server-client";

const TOKEN_KEY = "mcp-app-server-settings-token";

/** The host's trade of a one-time code for the token (`src/host/host.ts`, SESSION_PATH). */
const SESSION_PATH = "/host/session";

/** This run's token, or why the page has none. */
export type Session = { readonly token: string } | { readonly problem: string };

/**
 * This run's token: from `#token=`, or traded for `#code=` (both then removed from the address bar), else from this
 * tab's earlier load.
 */
export async function takeSession(): Promise<Session> {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const token = fragment.get("token");
  const code = fragment.get("code");
  if (token !== null || code !== null) history.replaceState(null, "", location.pathname + location.search);
  if (token !== null) return keep(token);
  if (code !== null) {
    const traded = await trade(code);
    if (traded !== undefined) return keep(traded);
    return {
      problem:
        "This link was already used or has expired (it opens one page, once, shortly after the host made it). Open the URL the host printed, or start it again with --open.",
    };
  }
  const kept = sessionStorage.getItem(TOKEN_KEY);
  if (kept !== null) return { token: kept };
  return { problem: "This page needs the URL the host printed (it carries this run's token)." };
}

function keep(token: string): Session {
  sessionStorage.setItem(TOKEN_KEY, token);
  return { token };
}

async function trade(code: string): Promise<string | undefined> {
  try {
    const response = await fetch(SESSION_PATH, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ code }),
    });
    if (!response.ok) return undefined;
    const answer: unknown = await response.json();
    const token = typeof answer === "object" && answer !== null ? (answer as { token?: unknown }).token : undefined;
    return typeof token === "string" ? token : undefined;
  } catch {
    return undefined;
  }
}

/** A transport on an open WebSocket. */
export function webSocketTransport(socket: WebSocket): Transport {
  let receiver: TransportReceiver | undefined;
  let closedResolve: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    closedResolve = resolve;
  });
  socket.addEventListener("close", (event) => {
    receiver?.closed({ code: null, signal: null, stderrTail: event.reason });
    closedResolve();
  });
  return {
    start(to) {
      receiver = to;
      socket.addEventListener("message", (event: MessageEvent<unknown>) => {
        if (typeof event.data === "string") to.message(event.data);
      });
      if (socket.readyState === WebSocket.CLOSED) to.closed({ code: null, signal: null, stderrTail: "" });
    },
    send(text) {
      if (socket.readyState === WebSocket.OPEN) socket.send(text);
    },
    close() {
      socket.close(1000, "closed by the page");
      return closed;
    },
  };
}

/** Open the bridge and initialize a client on it (the page is a client of its own, as any host's is). */
export async function connect(token: string): Promise<AppServerClient> {
  const url = `ws://${location.host}/bridge?token=${encodeURIComponent(token)}`;
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true });
    socket.addEventListener("close", (event) => reject(new Error(closeReason(event))), { once: true });
  });
  const client = new AppServerClient(webSocketTransport(socket));
  // The page renders MCP Apps views (the Thread tab): servers the daemon connects from now on are told so.
  await client.initialize({ name: "mcp-app-server-settings", version: "0.1.0", title: "MCP settings" }, { mcpApps: {} });
  return client;
}

function closeReason(event: CloseEvent): string {
  if (event.code === 1006) return "the host refused the connection or is not running (is the token current?)";
  return event.reason || `the bridge closed (${event.code})`;
}
