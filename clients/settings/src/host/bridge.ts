// The page's WebSocket bridge: each accepted WebSocket gets its own connection to the daemon's `--listen` socket and
// relays JSON-RPC messages both ways, one text frame per message. The host adds nothing to the protocol: the page
// initializes its connection itself, so every page (or tab) is a client of its own, as any host's would be.
import { connect } from "node:net";
import type { Socket } from "node:net";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { streamTransport } from "mcp-app-server-client";
import { WebSocketServer } from "ws";
import type { RawData, WebSocket } from "ws";
import type { Gate, Refusal } from "./gate.js";

/** The path the page opens its WebSocket on. */
export const BRIDGE_PATH = "/bridge";
/** The daemon discards lines over 4 MiB; a frame a little larger is still relayed so that it answers for itself. */
const MAX_FRAME_BYTES = 5 * 1024 * 1024;
/** Pages (or tabs) connected at once; the daemon serves at most 64 socket connections. */
const MAX_PAGES = 16;
/** Past this much unsent output to a page, the daemon's socket is paused (its own output bounds then apply). */
const HIGH_WATER_BYTES = 8 * 1024 * 1024;

/** WebSocket close codes the page tells apart. */
export const CLOSE = {
  /** The daemon's socket could not be reached or went away: reconnect later. */
  daemonUnavailable: 1011,
  /** The page sent something that is not one JSON-RPC message per text frame. */
  unsupportedData: 1003,
} as const;

/** One relayed page connection. */
interface Relay {
  readonly page: WebSocket;
  readonly daemon: Socket;
  /** The token the page connected with (a session's ends its relays). */
  readonly token: string | null;
}

/** Accepts the page's WebSockets and relays each to its own daemon connection. */
export class Bridge {
  private readonly server = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_FRAME_BYTES,
    perMessageDeflate: false,
  });
  private readonly relays = new Set<Relay>();

  constructor(
    private readonly socketPath: string,
    private readonly gate: Gate,
    private readonly log: (line: string) => void,
  ) {}

  /** Page connections open now. */
  get size(): number {
    return this.relays.size;
  }

  /** An HTTP upgrade: refused (with a status) unless it is this run's page asking for the bridge. Nothing a request
   * carries (a target no URL parser takes, a peer that resets) can throw out of the server's listener. */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on("error", () => socket.destroy());
    try {
      this.accept(request, socket, head);
    } catch (error) {
      this.log(`bridge: refused a connection (${error instanceof Error ? error.message : String(error)})`);
      socket.destroy();
    }
  }

  private accept(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    const refusal: Refusal | undefined =
      url.pathname !== BRIDGE_PATH
        ? { status: 403, reason: "not the bridge" }
        : (this.gate.refusal(request, url.searchParams.get("token")) ??
          (this.relays.size >= MAX_PAGES ? { status: 403, reason: "too many pages are connected" } : undefined));
    if (refusal !== undefined) {
      this.log(`bridge: refused a connection (${refusal.reason})`);
      socket.end(`HTTP/1.1 ${refusal.status} ${refusal.reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    const token = url.searchParams.get("token");
    this.server.handleUpgrade(request, socket, head, (page) => this.relay(page, token));
  }

  /** Close the page connections that came with `token` (a session that was ended). */
  endSession(token: string): void {
    for (const relay of [...this.relays]) {
      if (relay.token !== token) continue;
      this.relays.delete(relay);
      relay.page.terminate();
      relay.daemon.destroy();
    }
  }

  /** Close every page connection and its daemon connection. */
  close(): void {
    for (const { page, daemon } of this.relays) {
      page.terminate();
      daemon.destroy();
    }
    this.relays.clear();
    this.server.close();
  }

  private relay(page: WebSocket, token: string | null): void {
    const daemon = connect(this.socketPath);
    const relay: Relay = { page, daemon, token };
    this.relays.add(relay);
    const transport = streamTransport(daemon, daemon);
    let ended = false;
    const end = (code: number, reason: string): void => {
      if (ended) return;
      ended = true;
      this.relays.delete(relay);
      daemon.destroy();
      if (page.readyState === page.OPEN || page.readyState === page.CONNECTING) page.close(code, reason);
    };
    daemon.on("error", (error) => end(CLOSE.daemonUnavailable, `the daemon is not reachable: ${error.message}`));
    transport.start({
      message: (text) => {
        page.send(text, () => {
          if (daemon.isPaused() && page.bufferedAmount < HIGH_WATER_BYTES / 2) daemon.resume();
        });
        if (page.bufferedAmount > HIGH_WATER_BYTES) daemon.pause();
      },
      closed: () => end(CLOSE.daemonUnavailable, "the daemon closed the connection"),
    });
    page.on("message", (data: RawData, isBinary: boolean) => {
      const text = isBinary ? undefined : rawText(data);
      if (text === undefined || text.includes("\n")) {
        end(CLOSE.unsupportedData, "one JSON-RPC message per text frame");
        return;
      }
      transport.send(text);
      if (daemon.writableNeedDrain) {
        page.pause();
        daemon.once("drain", () => page.resume());
      }
    });
    page.on("close", () => end(1000, "closed"));
    page.on("error", () => end(1000, "closed"));
  }
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString("utf8");
  return data.toString("utf8");
}
