// The page's side of the bridge: a `Transport` of the client runtime over a browser WebSocket (one JSON-RPC message
// per text frame), and the token the host printed, taken from the URL's fragment and then hidden from the address bar.
import { AppServerClient } from "mcp-app-server-client";
import type { Transport, TransportReceiver } from "mcp-app-server-client";

const TOKEN_KEY = "mcp-app-server-settings-token";

/** This run's token: from `#token=` (then removed from the address bar), else from this tab's earlier load. */
export function takeToken(): string | undefined {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const token = fragment.get("token");
  if (token !== null) {
    sessionStorage.setItem(TOKEN_KEY, token);
    history.replaceState(null, "", location.pathname + location.search);
    return token;
  }
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
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
  await client.initialize({ name: "mcp-app-server-settings", version: "0.1.0", title: "MCP settings" });
  return client;
}

function closeReason(event: CloseEvent): string {
  if (event.code === 1006) return "the host refused the connection or is not running (is the token current?)";
  return event.reason || `the bridge closed (${event.code})`;
}
