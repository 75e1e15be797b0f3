// A transport over a postMessage pair: a renderer that talks to the sidecar through its host's IPC (an Electron
// `MessagePort`, a worker, a `MessageChannel`). Each message is one JSON-RPC message's text; the host relays it to
// the sidecar's stdin as a line, and each line of the sidecar's stdout back as one message.
import { MAX_OUTPUT_LINE_BYTES } from "../generated/protocol.js";
import type { Transport, TransportReceiver } from "./transport.js";

/** What `messagePortTransport` talks over: a `MessagePort`, or anything that posts and delivers messages. */
export interface MessagePortLike {
  postMessage(message: unknown): void;
  addEventListener(type: "message", listener: (event: { readonly data: unknown }) => void): void;
  removeEventListener(type: "message", listener: (event: { readonly data: unknown }) => void): void;
  start?(): void;
  close?(): void;
}

/** The message a port carries when its side ends (either way); `null` ends it too, for hosts that send that. */
export const PORT_CLOSED = { type: "mcp-app-server/closed" } as const;

/** A transport over `port`: strings are messages (one past the daemon's longest line is dropped and reported, as a
 * stream's would be), `PORT_CLOSED` (or `null`) the end; anything else is ignored. */
export function messagePortTransport(port: MessagePortLike): Transport {
  let receiver: TransportReceiver | undefined;
  let ended = false;
  let resolveEnded: () => void = () => {};
  const endedPromise = new Promise<void>((resolve) => {
    resolveEnded = resolve;
  });
  const end = (error?: Error): void => {
    if (ended) return;
    ended = true;
    port.removeEventListener("message", listener);
    const info = { code: null, signal: null, stderrTail: "" };
    receiver?.closed(error === undefined ? info : { ...info, error });
    resolveEnded();
  };
  const listener = (event: { readonly data: unknown }): void => {
    const data = event.data;
    if (typeof data === "string") {
      if (data.length <= MAX_OUTPUT_LINE_BYTES) receiver?.message(data);
      else receiver?.dropped?.({ problem: "tooLong", head: data.slice(0, 256), maxBytes: MAX_OUTPUT_LINE_BYTES });
    } else if (data === null || (typeof data === "object" && (data as { type?: unknown }).type === PORT_CLOSED.type)) {
      end();
    }
  };
  return {
    start(to) {
      receiver = to;
      port.addEventListener("message", listener);
      port.start?.();
    },
    send(text) {
      if (!ended) port.postMessage(text);
    },
    close() {
      if (!ended) {
        port.postMessage(PORT_CLOSED);
        port.close?.();
        end();
      }
      return endedPromise;
    },
  };
}
