// The transport seam: what the protocol core needs from a connection (a duplex of JSON lines), and that duplex over a
// pair of byte streams.
import { MAX_OUTPUT_LINE_BYTES } from "../generated/protocol.js";
import { LineReader } from "./lines.js";
import type { DroppedLine } from "./lines.js";

/** How a connection ended. */
export interface TransportClosed {
  /** The sidecar's exit code, when the transport runs one and it exited normally. */
  readonly code: number | null;
  /** The signal that ended the sidecar, if one did. */
  readonly signal: string | null;
  /** The end of the sidecar's stderr ("" when the transport has none). */
  readonly stderrTail: string;
  /** Why the connection ended, when it broke (a spawn or stream error). */
  readonly error?: Error;
}

/** Where a transport delivers what it receives. */
export interface TransportReceiver {
  /** One incoming message: the text of one JSON-RPC message, without framing. */
  message(text: string): void;
  /** The connection ended; nothing more will be received. Called once. */
  closed(info: TransportClosed): void;
  /** A line the transport dropped instead of delivering (longer than its cap, or not UTF-8). */
  dropped?(line: DroppedLine): void;
}

/**
 * A duplex of JSON-RPC messages: the sidecar's stdio, a Unix socket, an Electron IPC bridge. The client owns it once
 * given: it calls `start` once, then `send` for each message and `close` at the end.
 */
export interface Transport {
  /** Begin delivering incoming messages. */
  start(receiver: TransportReceiver): void;
  /** Send one message (the JSON text, without framing). */
  send(text: string): void;
  /** End the outgoing side (stdin EOF for a sidecar); resolves once the connection has ended. */
  close(): Promise<void>;
}

/** What `streamTransport` reads: a Node readable stream, or anything with the same events. */
export interface ReadableLike {
  on(event: "data", listener: (chunk: string | Uint8Array) => void): unknown;
  on(event: "end" | "close", listener: () => void): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
}

/** What `streamTransport` writes to: a Node writable stream, or anything with the same methods. */
export interface WritableLike {
  write(chunk: string): unknown;
  end(): unknown;
}

/** How `streamTransport` and `spawn` read lines. */
export interface LineOptions {
  /**
   * The longest line delivered, in bytes (default `MAX_OUTPUT_LINE_BYTES`, the longest line the daemon writes); a longer one is dropped
   * as it arrives and reported as a `ProtocolViolation`.
   */
  readonly maxLineBytes?: number | undefined;
}

/**
 * Newline-delimited JSON over a pair of byte streams (a socket, a child's stdio): each message is one line, as the
 * daemon frames them.
 */
export function streamTransport(readable: ReadableLike, writable: WritableLike, options: LineOptions = {}): Transport {
  let receiver: TransportReceiver | undefined;
  let ended = false;
  let resolveEnded: () => void = () => {};
  const endedPromise = new Promise<void>((resolve) => {
    resolveEnded = resolve;
  });
  const end = (error?: Error): void => {
    if (ended) return;
    ended = true;
    const info: TransportClosed = { code: null, signal: null, stderrTail: "" };
    receiver?.closed(error === undefined ? info : { ...info, error });
    resolveEnded();
  };
  return {
    start(to) {
      receiver = to;
      const lines = lineReader(to, options);
      readable.on("data", (chunk) => lines.push(chunk));
      readable.on("end", () => end());
      readable.on("close", () => end());
      readable.on("error", (error) => end(error));
    },
    send(text) {
      writable.write(`${text}\n`);
    },
    close() {
      writable.end();
      return endedPromise;
    },
  };
}

/** The line reader of a transport that delivers to `receiver`. */
export function lineReader(receiver: TransportReceiver, options: LineOptions): LineReader {
  return new LineReader(options.maxLineBytes ?? MAX_OUTPUT_LINE_BYTES, {
    line: (text) => receiver.message(text),
    dropped: (line) => receiver.dropped?.(line),
  });
}
