// The protocol core: one JSON-RPC peer over a transport. It reads messages (checked by the guard before anything sees
// them), sends requests and matches their answers (rpc/pending.ts), times them out and cancels them with
// `$/cancelRequest`, and dispatches notifications and server requests to handlers registered by method. It knows
// nothing of initialize, restarts or what the methods mean: that is the app client's (client.ts).
import { AppServerError, ProtocolViolation } from "../errors.js";
import type { AppServerErrorOf, ViolationKind } from "../errors.js";
import { ERROR_CODES } from "../generated/protocol.js";
import type {
  JsonRpcError,
  RequestId,
  ServerNotificationParamsByMethod,
  ServerRequestParamsByMethod,
  ServerResponseByMethod,
} from "../generated/protocol.js";
import { Emitter } from "./emitter.js";
import { ProtocolGuard } from "./guard.js";
import type { DroppedLine } from "./lines.js";
import { PendingRequests } from "./pending.js";
import type { PendingRequest } from "./pending.js";
import type { Transport, TransportClosed } from "./transport.js";

/** How long a request may take and how to cancel it. */
export interface RequestOptions {
  /** Aborting it sends `$/cancelRequest` and rejects the request with reason `cancelled`. */
  readonly signal?: AbortSignal | undefined;
  /**
   * After this long (ms), `$/cancelRequest` is sent and the request rejects with reason `timeout`; `Infinity` never.
   * The default is the client's `requestTimeoutMs`.
   */
  readonly timeoutMs?: number | undefined;
}

/** What a server request's handler is given besides the params. */
export interface ServerRequestContext {
  /** Aborted when the request was resolved without this answer or the connection ended; nothing is sent then. */
  readonly signal: AbortSignal;
  /** The server request's id. */
  readonly requestId: RequestId;
}

/** A method the daemon sends requests of. */
export type ServerRequestMethod = keyof ServerRequestParamsByMethod & keyof ServerResponseByMethod;

/** Answers one server request method. */
export type ServerRequestHandler<M extends ServerRequestMethod> = (
  params: ServerRequestParamsByMethod[M],
  context: ServerRequestContext,
) => ServerResponseByMethod[M] | Promise<ServerResponseByMethod[M]>;

/** A notification method the daemon sends. */
export type NotificationMethod = keyof ServerNotificationParamsByMethod;

/** What the core is told by its owner. */
export interface ConnectionOptions {
  /** Called with each message sent (`out`) and received (`in`), as JSON text. */
  readonly trace?: ((direction: "in" | "out", text: string) => void) | undefined;
  /** The timeout of a request that names none (ms). */
  readonly requestTimeoutMs: number;
  /** Where what reaches no caller goes: violations of notifications, unmatched answers, throwing handlers. */
  report(error: Error): void;
  /** The transport ended; every request in flight has been rejected with `lost`. */
  closed(info: TransportClosed, lost: AppServerErrorOf<"connectionLost">): void;
}

/** One `request` call's options as the core takes them. */
export interface SendOptions extends RequestOptions {
  /** Send only once this resolves (the app client's handshake); the timeout and signal count from the call. */
  readonly after?: Promise<void> | undefined;
}

interface Link {
  readonly transport: Transport;
  closed: boolean;
}

interface Registration {
  readonly handle: (params: never, context: ServerRequestContext) => unknown;
  readonly fallback: unknown;
}

type JsonObject = { readonly [key: string]: unknown };

/** setTimeout's longest delay (about 24.8 days); a longer one would fire at once, so it means "never". */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** The start of a response as the daemon writes it, up to its id: what a dropped line is matched by. */
const RESPONSE_HEAD = /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")/;

/** A JSON-RPC peer speaking the protocol's messages over one transport at a time (a restart connects the next). */
export class RpcConnection {
  private readonly guard = new ProtocolGuard();
  private readonly pending = new PendingRequests();
  private readonly requestHandlers = new Map<string, Registration>();
  private readonly notifications: Emitter<ServerNotificationParamsByMethod>;
  private readonly serverRequests = new Map<RequestId, AbortController>();
  private link: Link | undefined;

  constructor(private readonly options: ConnectionOptions) {
    this.notifications = new Emitter((error) => options.report(error));
  }

  /** Whether a transport is connected and open. */
  get isOpen(): boolean {
    return this.link !== undefined && !this.link.closed;
  }

  /** The transport in use (the last one connected). */
  get transport(): Transport | undefined {
    return this.link?.transport;
  }

  /**
   * Start speaking over `transport`. Messages that arrive before the guard's validators are loaded wait for them, in
   * order, with the transport's end behind them.
   */
  connect(transport: Transport): void {
    const link: Link = { transport, closed: false };
    this.link = link;
    const inbox: Array<() => void> = [];
    const drain = (): void => {
      while (inbox.length > 0) {
        try {
          inbox[0]?.(); // while it runs, what arrives queues behind it
        } catch (error) {
          this.options.report(asError(error));
        }
        inbox.shift();
      }
    };
    const deliver = (event: () => void): void => {
      if (this.guard.isLoaded && inbox.length === 0) event();
      else if (inbox.push(event) === 1) {
        this.guard.loaded.then(drain, (error: unknown) => this.options.report(asError(error)));
      }
    };
    transport.start({
      message: (text) =>
        deliver(() => {
          if (this.link === link && !link.closed) this.receive(text);
        }),
      dropped: (line) =>
        deliver(() => {
          if (this.link === link && !link.closed) this.dropped(line);
        }),
      closed: (info) => deliver(() => this.linkClosed(link, info)),
    });
  }

  /** Send a request and resolve with its result, checked against the protocol; typed by the app client. */
  request(method: string, params: unknown, options: SendOptions = {}): Promise<unknown> {
    const { signal, after } = options;
    const timeoutMs = options.timeoutMs ?? this.options.requestTimeoutMs;
    return new Promise((resolve, reject) => {
      let sent: PendingRequest | undefined;
      let done = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const settle = (outcome: () => void): void => {
        if (done) return;
        done = true;
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        outcome();
      };
      const giveUp = (error: AppServerError): void => {
        if (done) return;
        settle(() => reject(error));
        if (sent === undefined) return;
        this.pending.abandon(sent);
        this.notify("$/cancelRequest", { id: sent.id });
      };
      const onAbort = (): void =>
        giveUp(AppServerError.local("cancelled", `${method} was cancelled by the client`, {}, method));
      if (signal?.aborted) {
        onAbort();
        return;
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      if (Number.isFinite(timeoutMs) && timeoutMs <= MAX_TIMER_MS) {
        const message = `${method} got no answer within ${timeoutMs} ms`;
        timer = setTimeout(
          () => giveUp(AppServerError.local("timeout", message, { method, timeoutMs }, method)),
          Math.max(0, timeoutMs),
        );
      }
      const dispatch = (): void => {
        if (done) return;
        if (!this.isOpen) {
          settle(() => reject(AppServerError.local("connectionLost", "the connection is closed", {}, method)));
          return;
        }
        sent = this.pending.open(
          method,
          (result) => settle(() => resolve(result)),
          (error) => settle(() => reject(error)),
        );
        this.post({ jsonrpc: "2.0", id: sent.id, method, ...(params === undefined ? {} : { params }) });
      };
      if (after === undefined) dispatch();
      else after.then(dispatch, (error: Error) => settle(() => reject(error)));
    });
  }

  /** Send a notification. */
  notify(method: string, params?: JsonObject): void {
    this.post({ jsonrpc: "2.0", method, ...(params === undefined ? {} : { params }) });
  }

  /**
   * Answer the daemon's requests of `method` with `handler`. `fallback` is answered instead when the params do not
   * match the protocol, or the handler throws or answers something the protocol does not allow (each reported).
   * A later registration of the same method replaces this one. Returns the function that removes the handler (the
   * method is then answered `methodNotFound`); it tells whether the handler was still the method's.
   */
  onRequest<M extends ServerRequestMethod>(
    method: M,
    handler: ServerRequestHandler<M>,
    fallback: ServerResponseByMethod[M],
  ): () => boolean {
    const registration: Registration = { handle: handler as Registration["handle"], fallback };
    this.requestHandlers.set(method, registration);
    return () => {
      if (this.requestHandlers.get(method) !== registration) return false;
      this.requestHandlers.delete(method);
      return true;
    };
  }

  /** Call `handler` with the params of each checked notification of `method`; returns the function that stops it. */
  onNotification<M extends NotificationMethod>(
    method: M,
    handler: (params: ServerNotificationParamsByMethod[M]) => void,
  ): () => void {
    return this.notifications.on(method, handler);
  }

  /** The daemon resolved server request `id` without waiting for the answer: abort its handler, send nothing. */
  abandonServerRequest(id: RequestId): void {
    this.serverRequests.get(id)?.abort();
  }

  /** End the current transport's outgoing side and resolve once it has ended. */
  async close(): Promise<void> {
    const link = this.link;
    if (link === undefined || link.closed) return;
    await link.transport.close();
    await this.guard.loaded.catch(() => undefined); // the transport's own end, queued behind early messages, first
    this.linkClosed(link, { code: null, signal: null, stderrTail: "" });
  }

  private post(message: JsonObject): void {
    const link = this.link;
    if (link === undefined || link.closed) return;
    const text = JSON.stringify(message);
    this.options.trace?.("out", text);
    link.transport.send(text);
  }

  private receive(text: string): void {
    this.options.trace?.("in", text);
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.options.report(violation("message", undefined, "", "is not JSON", text));
      return;
    }
    if (typeof message !== "object" || message === null || Array.isArray(message)) {
      this.options.report(violation("message", undefined, "", "is not an object", message));
      return;
    }
    const fields = message as JsonObject;
    if ("method" in fields) {
      if ("id" in fields) this.serverRequest(fields);
      else this.notification(fields);
    } else if ("id" in fields) {
      this.response(fields);
    } else {
      const problem = "is neither a request, a response nor a notification";
      this.options.report(violation("message", undefined, "", problem, message));
    }
  }

  private response(message: JsonObject): void {
    const match = this.pending.match(message.id);
    switch (match.kind) {
      case "abandoned":
        return;
      case "unknown":
        this.unmatched(message);
        return;
      case "mistyped":
        match.request.reject(
          violation(
            "response",
            match.request.method,
            "/id",
            `is ${JSON.stringify(message.id)}, not the number ${match.request.id}`,
            message,
          ),
        );
        return;
      case "pending":
        break;
    }
    const { request } = match;
    try {
      if ("error" in message) {
        this.guard.envelope("JsonRpcErrorResponse", message, "error", request.method);
        request.reject(new AppServerError(message.error as JsonRpcError, request.method));
      } else {
        this.guard.envelope("JsonRpcSuccessResponse", message, "response", request.method);
        this.guard.result(request.method, message.result, message);
        request.resolve(message.result);
      }
    } catch (error) {
      request.reject(error as Error);
    }
  }

  private unmatched(message: JsonObject): void {
    try {
      if (!("error" in message)) throw violation("response", undefined, "/id", "answers no request in flight", message);
      this.guard.envelope("JsonRpcErrorResponse", message, "error");
      // e.g. `id: null`: the daemon's answer to a line it could not read
      this.options.report(new AppServerError(message.error as JsonRpcError));
    } catch (error) {
      this.options.report(error as Error);
    }
  }

  private dropped(line: DroppedLine): void {
    const problem = line.problem === "tooLong" ? `is longer than ${line.maxBytes} bytes` : "is not UTF-8";
    const found = RESPONSE_HEAD.exec(line.head)?.[1];
    const match = found === undefined ? undefined : this.pending.match(JSON.parse(found));
    if (match?.kind === "pending" || match?.kind === "mistyped") {
      match.request.reject(violation("response", match.request.method, "", `a line that ${problem}`, line.head));
    } else if (match?.kind !== "abandoned") {
      this.options.report(violation("message", undefined, "", `a line that ${problem} was skipped`, line.head));
    }
  }

  private notification(message: JsonObject): void {
    const method = String(message.method);
    try {
      this.guard.envelope("JsonRpcNotification", message, "notification", method);
      this.guard.notification(method, message.params, message);
    } catch (error) {
      this.options.report(error as Error);
      return;
    }
    this.notifications.emit(method as NotificationMethod, message.params as never);
  }

  private serverRequest(message: JsonObject): void {
    const method = String(message.method);
    try {
      this.guard.envelope("JsonRpcRequest", message, "serverRequest", method);
    } catch (error) {
      this.options.report(error as Error);
      return;
    }
    const id = message.id as RequestId;
    const registration = this.requestHandlers.get(method);
    if (!this.guard.knowsServerRequest(method) || registration === undefined) {
      if (!this.guard.knowsServerRequest(method)) {
        this.options.report(
          violation("serverRequest", method, "/method", "is not a server request of the protocol", message),
        );
      }
      const error = { code: ERROR_CODES.methodNotFound, message: `unknown method ${method.slice(0, 100)}` };
      this.post({ jsonrpc: "2.0", id, error: { ...error, data: { reason: "methodNotFound" } } });
      return;
    }
    try {
      this.guard.serverRequest(method, message.params, message);
    } catch (error) {
      this.options.report(error as Error);
      this.post({ jsonrpc: "2.0", id, result: registration.fallback });
      return;
    }
    this.handle(method, id, message.params, registration);
  }

  private handle(method: string, id: RequestId, params: unknown, registration: Registration): void {
    const link = this.link;
    const controller = new AbortController();
    this.serverRequests.set(id, controller);
    let answered: unknown;
    try {
      answered = registration.handle(params as never, { signal: controller.signal, requestId: id });
    } catch (error) {
      answered = Promise.reject(error);
    }
    Promise.resolve(answered)
      .then((answer) => {
        const issues = this.guard.serverResponseIssues(method, answer);
        if (issues.length === 0) return answer;
        const first = issues[0];
        throw new TypeError(`the ${method} handler answered outside the protocol: ${first?.path} ${first?.message}`);
      })
      .catch((error: unknown) => {
        this.options.report(asError(error));
        return registration.fallback;
      })
      .then((answer) => {
        if (this.serverRequests.get(id) === controller) this.serverRequests.delete(id);
        if (!controller.signal.aborted && this.link === link) this.post({ jsonrpc: "2.0", id, result: answer });
      });
  }

  private linkClosed(link: Link, info: TransportClosed): void {
    if (link.closed) return;
    link.closed = true;
    if (this.link !== link) return;
    const why =
      info.code !== null
        ? `exit code ${info.code}`
        : info.signal !== null
          ? `signal ${info.signal}`
          : "connection closed";
    const tail = info.stderrTail.trim().split("\n").slice(-3).join("\n");
    const lost = AppServerError.local("connectionLost", `the sidecar went away (${why})${tail ? `: ${tail}` : ""}`, {});
    for (const request of this.pending.drain()) {
      request.reject(AppServerError.local("connectionLost", lost.message, {}, request.method));
    }
    for (const controller of this.serverRequests.values()) controller.abort();
    this.serverRequests.clear();
    this.options.closed(info, lost);
  }
}

/** A `ProtocolViolation` with one issue. */
export function violation(
  kind: ViolationKind,
  method: string | undefined,
  path: string,
  problem: string,
  received: unknown,
): ProtocolViolation {
  return new ProtocolViolation(kind, method, [{ path, message: problem }], received);
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
