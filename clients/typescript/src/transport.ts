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

/**
 * Newline-delimited JSON over a pair of byte streams (a socket, a child's stdio): each message is one line, as the
 * daemon frames them.
 */
export function streamTransport(readable: ReadableLike, writable: WritableLike): Transport {
  let receiver: TransportReceiver | undefined;
  let ended = false;
  let resolveEnded: () => void = () => {};
  const endedPromise = new Promise<void>((resolve) => {
    resolveEnded = resolve;
  });
  const lines = new LineSplitter();
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
      readable.on("data", (chunk) => {
        for (const line of lines.push(chunk)) to.message(line);
      });
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

/**
 * Splits a byte or text stream into lines (UTF-8, `\n`-terminated; a `\r` before it is dropped). An unfinished line
 * left when the stream ends is dropped, never parsed.
 */
export class LineSplitter {
  private readonly decoder = new TextDecoder();
  private pending = "";

  /** The complete lines this chunk ends. */
  push(chunk: string | Uint8Array): string[] {
    this.pending += typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true });
    const parts = this.pending.split("\n");
    this.pending = parts.pop() ?? "";
    return parts.map((line) => (line.endsWith("\r") ? line.slice(0, -1) : line)).filter((line) => line !== "");
  }
}
