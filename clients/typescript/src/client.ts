import { AppServerError, ProtocolViolation } from "./errors.js";
import type { AppServerErrorOf, ViolationKind } from "./errors.js";
import type {
  ClientCapabilities,
  ClientInfo,
  ClientParamsByMethod,
  ClientResponseByMethod,
  ElicitationRequest,
  ElicitationResponse,
  InitializeResult,
  JsonRpcError,
  RequestId,
  ServerNotificationParamsByMethod,
} from "./generated/protocol.js";
import { ProtocolGuard } from "./guard.js";
import type { SidecarOptions, SidecarTransport } from "./sidecar.js";
import type { Transport, TransportClosed } from "./transport.js";

/** A method a client calls with `request` (`initialize` goes through `initialize`). */
export type Method = Exclude<keyof ClientResponseByMethod & keyof ClientParamsByMethod, "initialize">;

/** The params of `method`. */
export type ParamsOf<M extends Method> = ClientParamsByMethod[M];

/** The result of `method`. */
export type ResultOf<M extends Method> = ClientResponseByMethod[M];

/** How long a request may take and how to cancel it. */
export interface RequestOptions {
  /** Aborting it sends `$/cancelRequest` and rejects the request with reason `cancelled`. */
  readonly signal?: AbortSignal | undefined;
  /** After this long, `$/cancelRequest` is sent and the request rejects with reason `timeout`. */
  readonly timeoutMs?: number | undefined;
}

/** `request`'s arguments after the method: params may be left out where every param is optional. */
export type RequestArgs<M extends Method> =
  object extends ParamsOf<M>
    ? [params?: ParamsOf<M> | undefined, options?: RequestOptions]
    : [params: ParamsOf<M>, options?: RequestOptions];

/** Methods whose results are pages (`data` and `nextCursor`) and whose params take a `cursor`. */
export type PaginatedMethod = {
  [M in Method]: ResultOf<M> extends { data: readonly unknown[] }
    ? "nextCursor" extends keyof ResultOf<M>
      ? "cursor" extends keyof ParamsOf<M>
        ? M
        : never
      : never
    : never;
}[Method];

/** One item of a paginated method's `data`. */
export type PageItem<M extends PaginatedMethod> = ResultOf<M> extends { data: readonly (infer T)[] } ? T : never;

/** How the sidecar (or any transport's peer) went away. */
export interface SidecarExit extends TransportClosed {
  /** The client was closed (`client.close()`); anything else is a crash or a broken connection. */
  readonly expected: boolean;
  /** The client will start a new sidecar (`restart`). */
  readonly restarting: boolean;
}

/** Events of the client itself, next to the daemon's notifications. */
export interface ClientEvents {
  /** The sidecar exited or the connection ended; in-flight requests have been rejected with `connectionLost`. */
  exit: SidecarExit;
  /** A restarted sidecar answered `initialize`: the client is usable again (subscriptions must be made again). */
  restarted: InitializeResult;
  /**
   * Something that could not be given to a caller: a `ProtocolViolation` of a notification or server request, an
   * error answer to no request, an exception thrown by a handler.
   */
  error: Error;
}

/** Every event `on` accepts: the daemon's notification methods and the client's own events. */
export type EventName = keyof ServerNotificationParamsByMethod | keyof ClientEvents;

/** What an event's handler gets: a notification's params, or the client event's payload. */
export type EventPayload<E extends EventName> = E extends keyof ServerNotificationParamsByMethod
  ? ServerNotificationParamsByMethod[E]
  : E extends keyof ClientEvents
    ? ClientEvents[E]
    : never;

/** What an elicitation handler is given besides the request. */
export interface ElicitationContext {
  /** Aborted when the daemon resolved the request without this answer (the call ended) or the sidecar went away. */
  readonly signal: AbortSignal;
  /** The server request's id (as `serverRequest/resolved` names it). */
  readonly requestId: RequestId;
}

/** Answers `mcpServer/elicitation/request`: shows the form and returns the user's decision. */
export type ElicitationHandler = (
  request: ElicitationRequest,
  context: ElicitationContext,
) => ElicitationResponse | Promise<ElicitationResponse>;

/** Options of a client on any transport. */
export interface ClientOptions {
  /** Called with each message sent (`out`) and received (`in`), as JSON text: for logs and bug reports. */
  readonly trace?: ((direction: "in" | "out", text: string) => void) | undefined;
}

/** When and how often a crashed sidecar is started again. */
export interface RestartPolicy {
  /** The first delay before a restart (default 250 ms); it doubles with each failed attempt. */
  readonly initialDelayMs?: number;
  /** The longest delay (default 8 s). */
  readonly maxDelayMs?: number;
  /** Consecutive restarts to try before giving up (default 10); a sidecar that ran 30 s resets the count. */
  readonly maxAttempts?: number;
}

/** Options of `AppServerClient.spawn`. */
export interface SpawnOptions extends ClientOptions, SidecarOptions {
  /** Who the client is (default `{name: "mcp-app-server-client", version}`). */
  readonly clientInfo?: ClientInfo | undefined;
  /** Sent with `initialize` (e.g. notification opt-outs). */
  readonly capabilities?: ClientCapabilities | undefined;
  /** Start the sidecar again after a crash, with backoff, and initialize it again. */
  readonly restart?: boolean | RestartPolicy | undefined;
  /** How long the sidecar may take to answer `initialize` (default 30 s). */
  readonly startTimeoutMs?: number | undefined;
}

/** The client's name and version when `spawn` is given none. */
export const CLIENT_INFO: ClientInfo = { name: "mcp-app-server-client", version: "0.1.0" };

const DEFAULT_START_TIMEOUT_MS = 30_000;
const STABLE_MS = 30_000;

interface Pending {
  readonly method: string;
  resolve(result: unknown): void;
  reject(error: Error): void;
}

interface Link {
  readonly transport: Transport;
  closed: boolean;
  readonly since: number;
}

type State = "new" | "initializing" | "ready" | "restarting" | "closed";
type Handler = (payload: never) => void;
type JsonObject = { readonly [key: string]: unknown };

/**
 * The one way a host talks to mcp-app-server: typed requests, typed notifications, elicitation, and a guard that
 * checks every incoming message against the protocol's JSON Schema before anything reaches the caller.
 */
export class AppServerClient {
  private readonly guard = new ProtocolGuard();
  private readonly pending = new Map<RequestId, Pending>();
  private readonly abandoned = new Set<RequestId>();
  private readonly listeners = new Map<string, Set<Handler>>();
  private readonly elicitations = new Map<RequestId, AbortController>();
  private readonly waiters: Array<{ resolve(): void; reject(error: Error): void }> = [];
  private readonly trace: ClientOptions["trace"];
  private elicitationHandler: ElicitationHandler | undefined;
  private link: Link | undefined;
  private state: State = "new";
  private closing = false;
  private nextId = 1;
  private hello: { clientInfo: ClientInfo; capabilities: ClientCapabilities | undefined } | undefined;
  private result: InitializeResult | undefined;
  private relaunch: (() => Transport) | undefined;
  private restartPolicy: Required<RestartPolicy> | undefined;
  private restartAttempts = 0;
  private restartTimer: ReturnType<typeof setTimeout> | undefined;
  private startTimeoutMs = DEFAULT_START_TIMEOUT_MS;
  private readonly closedPromise: Promise<void>;
  private resolveClosed: () => void = () => {};

  /** A client on `transport`; call `initialize` before anything else. */
  constructor(transport: Transport, options: ClientOptions = {}) {
    this.trace = options.trace;
    this.closedPromise = new Promise((resolve) => {
      this.resolveClosed = resolve;
    });
    this.attach(transport);
  }

  /**
   * Start the sidecar (`command args… --data-dir DIR`), initialize it, and resolve with the client once it is ready.
   * With `restart`, a crashed sidecar is started and initialized again.
   */
  static async spawn(
    command: string,
    args: readonly string[] = [],
    options: SpawnOptions = {},
  ): Promise<AppServerClient> {
    const { startSidecar } = await import("./sidecar.js");
    const launch = (): Transport => startSidecar(command, args, options);
    const client = new AppServerClient(launch(), options);
    client.startTimeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    try {
      await client.initialize(options.clientInfo ?? CLIENT_INFO, options.capabilities);
    } catch (error) {
      await client.close();
      throw error;
    }
    if (options.restart) {
      const policy = options.restart === true ? {} : options.restart;
      client.relaunch = launch;
      client.restartPolicy = {
        initialDelayMs: policy.initialDelayMs ?? 250,
        maxDelayMs: policy.maxDelayMs ?? 8_000,
        maxAttempts: policy.maxAttempts ?? 10,
      };
    }
    return client;
  }

  /** The daemon's answer to `initialize` (of the current sidecar, after a restart). */
  get initializeResult(): InitializeResult | undefined {
    return this.result;
  }

  /** The sidecar's process id, for a client made by `spawn`. */
  get pid(): number | undefined {
    return (this.link?.transport as Partial<SidecarTransport> | undefined)?.pid;
  }

  /** Resolves when the client is closed for good (after `close()`, or when a sidecar is gone and not restarted). */
  get closed(): Promise<void> {
    return this.closedPromise;
  }

  /** `initialize` then `initialized`: the first thing to do on a client made with `new`. */
  async initialize(clientInfo: ClientInfo, capabilities?: ClientCapabilities): Promise<InitializeResult> {
    if (this.state !== "new") throw new Error("initialize was already called on this client");
    this.hello = { clientInfo, capabilities };
    this.state = "initializing";
    try {
      await this.handshake();
    } catch (error) {
      if (this.state === "initializing") this.state = "new";
      for (const waiter of this.waiters.splice(0)) waiter.reject(error as Error);
      throw error;
    }
    this.ready();
    return this.result as InitializeResult;
  }

  /**
   * Call `method`; resolves with its result, checked against the protocol. Rejects with `AppServerError` (typed by
   * reason) or `ProtocolViolation` (the answer does not match the protocol).
   */
  request<M extends Method>(method: M, ...args: RequestArgs<M>): Promise<ResultOf<M>> {
    const [params, options] = args as [ParamsOf<M> | undefined, RequestOptions | undefined];
    return this.send(method, params, options ?? {}, false) as Promise<ResultOf<M>>;
  }

  /** Every item of a paginated list, page after page (following `nextCursor`). */
  async *paginate<M extends PaginatedMethod>(
    method: M,
    params?: Omit<ParamsOf<M>, "cursor">,
    options: RequestOptions = {},
  ): AsyncGenerator<PageItem<M>, void, undefined> {
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = (await this.send(
        method,
        { ...params, ...(cursor === undefined ? {} : { cursor }) },
        options,
        false,
      )) as {
        data: PageItem<M>[];
        nextCursor?: string;
      };
      yield* page.data;
      cursor = page.nextCursor;
      if (cursor !== undefined && seen.has(cursor)) {
        throw violation("response", method, "/result/nextCursor", "repeats a cursor", page);
      }
      if (cursor !== undefined) seen.add(cursor);
    } while (cursor !== undefined);
  }

  /** Listen to a notification (its params, checked) or a client event; returns the function that stops it. */
  on<E extends EventName>(event: E, handler: (payload: EventPayload<E>) => void): () => void {
    let handlers = this.listeners.get(event);
    if (handlers === undefined) {
      handlers = new Set();
      this.listeners.set(event, handlers);
    }
    const stored = handler as Handler;
    handlers.add(stored);
    return () => {
      this.listeners.get(event)?.delete(stored);
    };
  }

  /**
   * Answer `mcpServer/elicitation/request` with `handler` (the only way to). Without a handler every elicitation is
   * answered `cancel`; a handler that throws, or answers with something that is not an `ElicitationResponse`, is
   * answered `cancel` too. Returns the function that removes the handler.
   */
  onElicitation(handler: ElicitationHandler): () => void {
    this.elicitationHandler = handler;
    return () => {
      if (this.elicitationHandler === handler) this.elicitationHandler = undefined;
    };
  }

  /** End the connection (stdin EOF for a sidecar) and resolve once it has ended; no restart follows. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.restartTimer !== undefined) clearTimeout(this.restartTimer);
    const link = this.link;
    if (link !== undefined && !link.closed) {
      await link.transport.close();
      this.linkClosed(link, { code: null, signal: null, stderrTail: "" });
    } else if (this.state !== "closed") {
      this.finish();
    }
    await this.closedPromise;
  }

  private attach(transport: Transport): void {
    const link: Link = { transport, closed: false, since: Date.now() };
    this.link = link;
    transport.start({
      message: (text) => {
        if (this.link === link && !link.closed) this.receive(text);
      },
      closed: (info) => this.linkClosed(link, info),
    });
  }

  private async handshake(): Promise<void> {
    const hello = this.hello as NonNullable<AppServerClient["hello"]>;
    const params = {
      clientInfo: hello.clientInfo,
      ...(hello.capabilities === undefined ? {} : { capabilities: hello.capabilities }),
    };
    this.result = (await this.send("initialize", params, { timeoutMs: this.startTimeoutMs }, true)) as InitializeResult;
    this.post({ jsonrpc: "2.0", method: "initialized" });
  }

  private ready(): void {
    this.state = "ready";
    for (const waiter of this.waiters.splice(0)) waiter.resolve();
  }

  private whenReady(): Promise<void> {
    switch (this.state) {
      case "ready":
        return Promise.resolve();
      case "initializing":
      case "restarting":
        return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
      case "new":
        return Promise.reject(new Error("call initialize() before any other request"));
      case "closed":
        return Promise.reject(lost("the client is closed"));
    }
  }

  private send(method: string, params: unknown, options: RequestOptions, immediate: boolean): Promise<unknown> {
    const { signal, timeoutMs } = options;
    return new Promise((resolve, reject) => {
      let id: RequestId | undefined;
      let done = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const settle = (outcome: () => void): void => {
        if (done) return;
        done = true;
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        if (id !== undefined) this.pending.delete(id);
        outcome();
      };
      const giveUp = (error: AppServerError): void => {
        const sent = id;
        settle(() => reject(error));
        if (sent !== undefined) this.cancelUpstream(sent);
      };
      const onAbort = (): void =>
        giveUp(AppServerError.local("cancelled", `${method} was cancelled by the client`, {}, method));
      if (signal?.aborted) {
        onAbort();
        return;
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      if (timeoutMs !== undefined) {
        timer = setTimeout(
          () =>
            giveUp(
              AppServerError.local(
                "timeout",
                `${method} got no answer within ${timeoutMs} ms`,
                { method, timeoutMs },
                method,
              ),
            ),
          timeoutMs,
        );
      }
      const dispatch = (): void => {
        if (done) return;
        if (this.link === undefined || this.link.closed) {
          settle(() => reject(AppServerError.local("connectionLost", "the connection is closed", {}, method)));
          return;
        }
        id = this.nextId++;
        this.pending.set(id, {
          method,
          resolve: (result) => settle(() => resolve(result)),
          reject: (error) => settle(() => reject(error)),
        });
        this.post({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) });
      };
      if (immediate) dispatch();
      else this.whenReady().then(dispatch, (error: Error) => settle(() => reject(error)));
    });
  }

  private cancelUpstream(id: RequestId): void {
    this.abandoned.add(id);
    this.post({ jsonrpc: "2.0", method: "$/cancelRequest", params: { id } });
  }

  private post(message: JsonObject): void {
    const link = this.link;
    if (link === undefined || link.closed) return;
    const text = JSON.stringify(message);
    this.trace?.("out", text);
    link.transport.send(text);
  }

  private receive(text: string): void {
    this.trace?.("in", text);
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.report(violation("message", undefined, "", "is not JSON", text));
      return;
    }
    if (typeof message !== "object" || message === null || Array.isArray(message)) {
      this.report(violation("message", undefined, "", "is not an object", message));
      return;
    }
    const fields = message as JsonObject;
    if ("method" in fields) {
      if ("id" in fields) this.serverRequest(fields);
      else this.notification(fields);
    } else if ("id" in fields) {
      this.response(fields);
    } else {
      this.report(violation("message", undefined, "", "is neither a request, a response nor a notification", message));
    }
  }

  private response(message: JsonObject): void {
    const id = message.id;
    // An answer to a request given up on (aborted, timed out) is dropped.
    if ((typeof id === "string" || typeof id === "number") && this.abandoned.delete(id)) return;
    const pending = typeof id === "string" || typeof id === "number" ? this.pending.get(id) : undefined;
    if (pending === undefined) {
      this.unmatched(message);
      return;
    }
    this.pending.delete(id as RequestId);
    try {
      if ("error" in message) {
        this.guard.envelope("JsonRpcErrorResponse", message, "error", pending.method);
        pending.reject(new AppServerError(message.error as JsonRpcError, pending.method));
      } else {
        this.guard.envelope("JsonRpcSuccessResponse", message, "response", pending.method);
        this.guard.result(pending.method, message.result, message);
        pending.resolve(message.result);
      }
    } catch (error) {
      pending.reject(error as Error);
    }
  }

  private unmatched(message: JsonObject): void {
    try {
      if (!("error" in message)) {
        throw violation("response", undefined, "/id", "answers no request in flight", message);
      }
      this.guard.envelope("JsonRpcErrorResponse", message, "error");
      this.report(new AppServerError(message.error as JsonRpcError)); // e.g. `id: null`: a message it could not read
    } catch (error) {
      this.report(error as Error);
    }
  }

  private notification(message: JsonObject): void {
    const method = String(message.method);
    try {
      this.guard.envelope("JsonRpcNotification", message, "notification", method);
      this.guard.notification(method, message.params, message);
    } catch (error) {
      this.report(error as Error);
      return;
    }
    const params = message.params as JsonObject;
    if (method === "serverRequest/resolved") this.elicitations.get(params.requestId as RequestId)?.abort();
    this.emit(method, params);
  }

  private serverRequest(message: JsonObject): void {
    const method = String(message.method);
    const id = message.id as RequestId;
    try {
      this.guard.envelope("JsonRpcRequest", message, "serverRequest", method);
    } catch (error) {
      this.report(error as Error);
      return;
    }
    if (!this.guard.knowsServerRequest(method)) {
      this.report(violation("serverRequest", method, "/method", "is not a server request of the protocol", message));
      this.post({
        jsonrpc: "2.0",
        id,
        error: { code: -32601, message: `unknown method ${method.slice(0, 100)}`, data: { reason: "methodNotFound" } },
      });
      return;
    }
    try {
      this.guard.serverRequest(method, message.params, message);
    } catch (error) {
      this.report(error as Error);
      this.answer(id, CANCEL);
      return;
    }
    this.elicit(id, message.params as ElicitationRequest);
  }

  private elicit(id: RequestId, request: ElicitationRequest): void {
    const handler = this.elicitationHandler;
    if (handler === undefined) {
      this.answer(id, CANCEL);
      return;
    }
    const link = this.link;
    const controller = new AbortController();
    this.elicitations.set(id, controller);
    Promise.resolve()
      .then(() => handler(request, { signal: controller.signal, requestId: id }))
      .then((answer) => {
        const issues = this.guard.serverResponseIssues("mcpServer/elicitation/request", answer);
        if (issues.length === 0) return answer;
        throw new TypeError(
          `the elicitation handler answered with no ElicitationResponse: ${issues[0]?.path} ${issues[0]?.message}`,
        );
      })
      .catch((error: unknown) => {
        this.report(error instanceof Error ? error : new Error(String(error)));
        return CANCEL;
      })
      .then((answer) => {
        this.elicitations.delete(id);
        if (!controller.signal.aborted && this.link === link) this.answer(id, answer);
      });
  }

  private answer(id: RequestId, result: ElicitationResponse): void {
    this.post({ jsonrpc: "2.0", id, result });
  }

  private emit(event: string, payload: unknown): void {
    for (const handler of [...(this.listeners.get(event) ?? [])]) {
      try {
        (handler as (payload: unknown) => void)(payload);
      } catch (error) {
        if (event !== "error") this.report(error instanceof Error ? error : new Error(String(error)));
      }
    }
  }

  private report(error: Error): void {
    this.emit("error", error);
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
    const error = lost(`the sidecar went away (${why})${tail ? `: ${tail}` : ""}`);
    for (const pending of [...this.pending.values()])
      pending.reject(AppServerError.local("connectionLost", error.message, {}, pending.method));
    this.pending.clear();
    this.abandoned.clear();
    for (const controller of this.elicitations.values()) controller.abort();
    this.elicitations.clear();
    if (Date.now() - link.since >= STABLE_MS) this.restartAttempts = 0;
    const policy = this.restartPolicy;
    const restarting =
      !this.closing && this.relaunch !== undefined && policy !== undefined && this.restartAttempts < policy.maxAttempts;
    this.emit("exit", { ...info, expected: this.closing, restarting } satisfies SidecarExit);
    if (!restarting) {
      this.finish(error);
      return;
    }
    this.state = "restarting";
    const delay = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** this.restartAttempts);
    this.restartAttempts += 1;
    this.restartTimer = setTimeout(() => void this.restart(), delay);
  }

  private async restart(): Promise<void> {
    this.restartTimer = undefined;
    if (this.closing || this.relaunch === undefined) return;
    this.attach(this.relaunch());
    const link = this.link as Link;
    try {
      await this.handshake();
    } catch {
      if (!link.closed) await link.transport.close(); // its exit schedules the next attempt
      return;
    }
    if (this.link !== link || link.closed) return;
    this.ready();
    this.emit("restarted", this.result);
  }

  private finish(error: AppServerError = lost("the client is closed")): void {
    this.state = "closed";
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
    this.resolveClosed();
  }
}

const CANCEL: ElicitationResponse = { action: "cancel" };

function violation(
  kind: ViolationKind,
  method: string | undefined,
  path: string,
  problem: string,
  received: unknown,
): ProtocolViolation {
  return new ProtocolViolation(kind, method, [{ path, message: problem }], received);
}

function lost(message: string): AppServerErrorOf<"connectionLost"> {
  return AppServerError.local("connectionLost", message, {});
}
