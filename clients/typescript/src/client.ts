// The app client: what a host programs against. Typed requests by method, typed notifications and client events,
// elicitation, and the sidecar's life (spawn, exit, restart), on top of the protocol core in rpc/.
import { AppServerError } from "./errors.js";
import type { AppServerErrorOf } from "./errors.js";
import { DAEMON_VERSION } from "./generated/protocol.js";
import type {
  BackgroundCall,
  ClientCapabilities,
  ClientInfo,
  ClientParamsByMethod,
  ClientResponseByMethod,
  CompletionParams,
  CompletionResult,
  ElicitationFormSchema,
  ElicitationRequest,
  ElicitationResponse,
  InitializeResult,
  ServerNotificationParamsByMethod,
  TaskInfo,
  ToolCallParams,
  ToolCallResult,
} from "./generated/protocol.js";
import { RpcConnection, violation } from "./rpc/connection.js";
import { Emitter } from "./rpc/emitter.js";
import type {
  NotificationMethod,
  RequestOptions,
  ServerRequestContext,
} from "./rpc/connection.js";
import type { Transport, TransportClosed } from "./rpc/transport.js";
import type {
  SidecarOptions,
  SidecarTransport,
  StderrSink,
} from "./sidecar.js";
import { Supervisor } from "./supervisor.js";
import type { RestartPolicy } from "./supervisor.js";

export type { RequestOptions } from "./rpc/connection.js";
export type { RestartPolicy } from "./supervisor.js";

/** A method a client calls with `request` (`initialize` goes through `initialize`). */
export type Method = Exclude<
  keyof ClientResponseByMethod & keyof ClientParamsByMethod,
  "initialize"
>;

/** The params of `method`. */
export type ParamsOf<M extends Method> = ClientParamsByMethod[M];

/** The result of `method`. */
export type ResultOf<M extends Method> = ClientResponseByMethod[M];

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
export type PageItem<M extends PaginatedMethod> =
  ResultOf<M> extends { data: readonly (infer T)[] } ? T : never;

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
   * Something that could not be given to a caller: a `ProtocolViolation` of a notification or server request (or of
   * a line that could not be read), an error answer to no request, an exception thrown by a handler.
   */
  error: Error;
}

/** Every event `on` accepts: the daemon's notification methods and the client's own events. */
export type EventName =
  keyof ServerNotificationParamsByMethod | keyof ClientEvents;

/** What an event's handler gets: a notification's params, or the client event's payload. */
export type EventPayload<E extends EventName> =
  E extends keyof ServerNotificationParamsByMethod
    ? ServerNotificationParamsByMethod[E]
    : E extends keyof ClientEvents
      ? ClientEvents[E]
      : never;

/** What an elicitation handler is given besides the request. */
export interface ElicitationContext extends ServerRequestContext {
  /** Aborted when the daemon resolved the request without this answer (the call ended) or the sidecar went away. */
  readonly signal: AbortSignal;
  /** The server request's id (as `serverRequest/resolved` names it). */
  readonly requestId: ServerRequestContext["requestId"];
}

/** A server asks the user to fill a form (`mode: "form"`). */
export type FormElicitationRequest = Omit<
  ElicitationRequest,
  "mode" | "requestedSchema" | "url" | "elicitationId"
> & {
  readonly mode: "form";
  readonly requestedSchema: ElicitationFormSchema;
};

/**
 * A server asks the user to open a URL (`mode: "url"`): show its full origin first; `accept` means the user agreed
 * to open it (the host opens it, never the daemon). `mcpServer/elicitation/completed` with the same `elicitationId`
 * says the server saw it done.
 */
export type UrlElicitationRequest = Omit<
  ElicitationRequest,
  "mode" | "requestedSchema" | "url" | "elicitationId"
> & {
  readonly mode: "url";
  readonly url: string;
  readonly elicitationId: string;
};

/** Either kind of elicitation, told apart by `mode`. */
export type AnyElicitationRequest =
  FormElicitationRequest | UrlElicitationRequest;

/** Answers `mcpServer/elicitation/request`: shows the form or the URL and returns the user's decision. */
export type ElicitationHandler = (
  request: AnyElicitationRequest,
  context: ElicitationContext,
) => ElicitationResponse | Promise<ElicitationResponse>;

/** The params of a tool call that waits for its result (no `background`). */
export type ToolCallForegroundParams = ToolCallParams & {
  readonly background?: false;
};

/** The params of a background tool call (answered at once with its task). */
export type ToolCallBackgroundParams = ToolCallParams & {
  readonly background: true;
};

/** A request as it arrived, narrowed to its mode; undefined when its fields do not fit the mode it names. */
export function elicitationOfMode(
  request: ElicitationRequest,
): AnyElicitationRequest | undefined {
  const { requestedSchema, url, elicitationId, ...common } = request;
  if (request.mode === "form" && requestedSchema !== undefined)
    return { ...common, mode: "form", requestedSchema };
  if (
    request.mode === "url" &&
    url !== undefined &&
    elicitationId !== undefined
  ) {
    return { ...common, mode: "url", url, elicitationId };
  }
  return undefined;
}

/** Options of a client on any transport. */
export interface ClientOptions {
  /** Called with each message sent (`out`) and received (`in`), as JSON text: for logs and bug reports. */
  readonly trace?:
    ((direction: "in" | "out", text: string) => void) | undefined;
  /** How long a request may take when it names no `timeoutMs` (default 330 000 ms; `Infinity` never times out). */
  readonly requestTimeoutMs?: number | undefined;
}

/** How long `waitFor` waits and how to stop it. */
export interface WaitOptions {
  /** Give up after this long (ms): rejects with reason `timeout`. Without it, waits until the client closes. */
  readonly timeoutMs?: number | undefined;
  /** Aborting it rejects with reason `cancelled`. */
  readonly signal?: AbortSignal | undefined;
}

/** Options of `AppServerClient.spawn`. */
export interface SpawnOptions extends ClientOptions, SidecarOptions {
  /** Who the client is (default `CLIENT_INFO`). */
  readonly clientInfo?: ClientInfo | undefined;
  /** Sent with `initialize` (e.g. notification opt-outs). */
  readonly capabilities?: ClientCapabilities | undefined;
  /** Start the sidecar again after a crash, with backoff, and initialize it again. */
  readonly restart?: boolean | RestartPolicy | undefined;
  /** How long the sidecar may take to answer `initialize` (default 30 s). */
  readonly startTimeoutMs?: number | undefined;
}

/** The client's name and version when `spawn` is given none (the package is versioned with the daemon). */
export const CLIENT_INFO: ClientInfo = {
  name: "mcp-app-server-client",
  version: DAEMON_VERSION,
};

/** A request's timeout when neither it nor the client names one: longer than the daemon's own tool timeouts. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 330_000;
const DEFAULT_START_TIMEOUT_MS = 30_000;
const ELICITATION = "mcpServer/elicitation/request";
const CANCEL: ElicitationResponse = { action: "cancel" };
const CLIENT_EVENTS: ReadonlySet<string> = new Set<keyof ClientEvents>([
  "exit",
  "restarted",
  "error",
]);

type State = "new" | "initializing" | "ready" | "restarting" | "closed";

/**
 * The one way a host talks to mcp-app-server: typed requests, typed notifications, elicitation, and a guard that
 * checks every incoming message against the protocol's JSON Schema before anything reaches the caller.
 */
export class AppServerClient {
  private readonly rpc: RpcConnection;
  private readonly events = new Emitter<ClientEvents>((error, event) => {
    if (event !== "error") this.emit("error", error);
  });
  private readonly waiters: Array<{
    resolve(): void;
    reject(error: Error): void;
  }> = [];
  private readonly finishers = new Emitter<{ finished: Error }>((error) =>
    this.emit("error", error),
  );
  private state: State = "new";
  private closing = false;
  private hello:
    | { clientInfo: ClientInfo; capabilities: ClientCapabilities | undefined }
    | undefined;
  private result: InitializeResult | undefined;
  private supervisor: Supervisor | undefined;
  private startTimeoutMs = DEFAULT_START_TIMEOUT_MS;
  private stderr: StderrSink | undefined;
  private readonly closedPromise: Promise<void>;
  private resolveClosed: () => void = () => {};

  /** A client on `transport`; call `initialize` before anything else. */
  constructor(transport: Transport, options: ClientOptions = {}) {
    this.closedPromise = new Promise((resolve) => {
      this.resolveClosed = resolve;
    });
    this.rpc = new RpcConnection({
      trace: options.trace,
      requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      report: (error) => this.emit("error", error),
      closed: (info, lost) => this.linkClosed(info, lost),
    });
    this.answerElicitationsCancel();
    this.rpc.onNotification("serverRequest/resolved", (resolved) =>
      this.rpc.abandonServerRequest(resolved.requestId),
    );
    this.attach(transport);
  }

  /**
   * Start the sidecar (`command args… --data-dir DIR`), initialize it, and resolve with the client once it is ready.
   * With `restart`, a crashed sidecar is started and initialized again; with `stderr`, every sidecar's stderr is
   * written there too.
   */
  static async spawn(
    command: string,
    args: readonly string[] = [],
    options: SpawnOptions = {},
  ): Promise<AppServerClient> {
    const { openStderr, startSidecar } = await import("#sidecar");
    let client: AppServerClient | undefined;
    const stderr =
      options.stderr === undefined
        ? undefined
        : openStderr(options.stderr, (error) => client?.emit("error", error));
    const launch = (): Transport =>
      startSidecar(command, args, options, stderr);
    const supervisor = options.restart
      ? new Supervisor(
          launch,
          options.restart === true ? {} : options.restart,
        )
      : undefined;
    client = new AppServerClient(launch(), options);
    client.stderr = stderr;
    client.startTimeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    try {
      await client.initialize(
        options.clientInfo ?? CLIENT_INFO,
        options.capabilities,
      );
    } catch (error) {
      await client.close();
      throw error;
    }
    client.supervisor = supervisor;
    return client;
  }

  /** The daemon's answer to `initialize` (of the current sidecar, after a restart). */
  get initializeResult(): InitializeResult | undefined {
    return this.result;
  }

  /** The sidecar's process id, for a client made by `spawn`. */
  get pid(): number | undefined {
    return (this.rpc.transport as Partial<SidecarTransport> | undefined)?.pid;
  }

  /** Resolves when the client is closed for good (after `close()`, or when a sidecar is gone and not restarted). */
  get closed(): Promise<void> {
    return this.closedPromise;
  }

  /** `initialize` then `initialized`: the first thing to do on a client made with `new`. */
  async initialize(
    clientInfo: ClientInfo,
    capabilities?: ClientCapabilities,
  ): Promise<InitializeResult> {
    if (this.state !== "new")
      throw new Error("initialize was already called on this client");
    this.hello = { clientInfo, capabilities };
    this.state = "initializing";
    try {
      await this.handshake();
    } catch (error) {
      if (this.state === "initializing") this.state = "new";
      for (const waiter of this.waiters.splice(0))
        waiter.reject(error as Error);
      throw error;
    }
    this.ready();
    return this.result as InitializeResult;
  }

  /**
   * Call `method`; resolves with its result, checked against the protocol. Rejects with `AppServerError` (typed by
   * reason: `cancelled`, `timeout` and `connectionLost` with `source: "client"` when the client decided) or
   * `ProtocolViolation` (the answer does not match the protocol).
   */
  request(
    method: "mcpServer/tool/call",
    params: ToolCallBackgroundParams,
    options?: RequestOptions,
  ): Promise<BackgroundCall>;
  request(
    method: "mcpServer/tool/call",
    params: ToolCallForegroundParams,
    options?: RequestOptions,
  ): Promise<ToolCallResult>;
  request<M extends Method>(
    method: M,
    ...args: RequestArgs<M>
  ): Promise<ResultOf<M>>;
  request<M extends Method>(
    method: M,
    ...args: RequestArgs<M>
  ): Promise<ResultOf<M>> {
    const [params, options] = args as [
      ParamsOf<M> | undefined,
      RequestOptions | undefined,
    ];
    return this.call(method, params, options ?? {}) as Promise<ResultOf<M>>;
  }

  /** Run a tool in a thread and wait for its result (`mcpServer/tool/call`). */
  callTool(
    params: ToolCallForegroundParams,
    options?: RequestOptions,
  ): Promise<ToolCallResult> {
    return this.request("mcpServer/tool/call", params, options);
  }

  /** Start a tool call in the background: resolves at once with its task (read it with `taskResult`). */
  async startBackgroundCall(
    params: Omit<ToolCallParams, "background">,
    options?: RequestOptions,
  ): Promise<TaskInfo> {
    return (
      await this.request(
        "mcpServer/tool/call",
        { ...params, background: true },
        options,
      )
    ).task;
  }

  /** A thread's background calls, running and finished (kept for their TTL). */
  async listTasks(
    threadId: string,
    options?: RequestOptions,
  ): Promise<TaskInfo[]> {
    return (await this.request("mcpServer/task/list", { threadId }, options))
      .data;
  }

  /** One background call as it is now. */
  async getTask(
    threadId: string,
    taskId: string,
    options?: RequestOptions,
  ): Promise<TaskInfo> {
    return (
      await this.request("mcpServer/task/get", { threadId, taskId }, options)
    ).task;
  }

  /** Wait for a background call's result (rejects with the call's error). */
  taskResult(
    threadId: string,
    taskId: string,
    options?: RequestOptions,
  ): Promise<ToolCallResult> {
    return this.request("mcpServer/task/result", { threadId, taskId }, options);
  }

  /** Cancel a background call (upstream too); resolves with the task as it ended. */
  async cancelTask(
    threadId: string,
    taskId: string,
    options?: RequestOptions,
  ): Promise<TaskInfo> {
    return (
      await this.request("mcpServer/task/cancel", { threadId, taskId }, options)
    ).task;
  }

  /** Suggestions for a prompt's or resource template's argument as the user types (`completion/complete`). */
  complete(
    params: CompletionParams,
    options?: RequestOptions,
  ): Promise<CompletionResult> {
    return this.request("mcpServer/completion/complete", params, options);
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
      const page = (await this.call(
        method,
        { ...params, ...(cursor === undefined ? {} : { cursor }) },
        options,
      )) as {
        data: PageItem<M>[];
        nextCursor?: string;
      };
      yield* page.data;
      cursor = page.nextCursor;
      if (cursor !== undefined && seen.has(cursor)) {
        throw violation(
          "response",
          method,
          "/result/nextCursor",
          "repeats a cursor",
          page,
        );
      }
      if (cursor !== undefined) seen.add(cursor);
    } while (cursor !== undefined);
  }

  /** Listen to a notification (its params, checked) or a client event; returns the function that stops it. */
  on<E extends EventName>(
    event: E,
    handler: (payload: EventPayload<E>) => void,
  ): () => void {
    if (!CLIENT_EVENTS.has(event)) {
      return this.rpc.onNotification(
        event as NotificationMethod,
        handler as (params: unknown) => void,
      );
    }
    return this.events.on(
      event as keyof ClientEvents,
      handler as (payload: unknown) => void,
    );
  }

  /**
   * The payload of the first `event` from now on that `predicate` accepts (any, without one), as `on` hands it
   * over. Rejects with reason `timeout` after `timeoutMs`, `cancelled` when `signal` aborts, `connectionLost` when
   * the client closes for good first, or with what `predicate` throws.
   */
  waitFor<E extends EventName>(
    event: E,
    predicate?: (payload: EventPayload<E>) => boolean,
    options: WaitOptions = {},
  ): Promise<EventPayload<E>> {
    const { signal, timeoutMs } = options;
    return new Promise((resolve, reject) => {
      const stops: Array<() => void> = [];
      const settle = (outcome: () => void): void => {
        for (const stop of stops.splice(0)) stop();
        outcome();
      };
      const fail = (error: Error): void => settle(() => reject(error));
      const abort = (): void =>
        fail(
          AppServerError.local(
            "cancelled",
            `waiting for ${event} was cancelled`,
            {},
          ),
        );
      if (signal?.aborted) {
        abort();
        return;
      }
      if (this.state === "closed") {
        fail(lost("the client is closed"));
        return;
      }
      stops.push(
        this.on(event, (payload) => {
          let accepted: boolean;
          try {
            accepted = predicate === undefined || predicate(payload);
          } catch (error) {
            fail(error instanceof Error ? error : new Error(String(error)));
            return;
          }
          if (accepted) settle(() => resolve(payload));
        }),
      );
      stops.push(this.finishers.on("finished", fail));
      if (signal !== undefined) {
        signal.addEventListener("abort", abort, { once: true });
        stops.push(() => signal.removeEventListener("abort", abort));
      }
      if (timeoutMs !== undefined && Number.isFinite(timeoutMs)) {
        const message = `no ${event} within ${timeoutMs} ms`;
        const timer = setTimeout(
          () =>
            fail(
              AppServerError.local("timeout", message, {
                method: event,
                timeoutMs,
              }),
            ),
          timeoutMs,
        );
        stops.push(() => clearTimeout(timer));
      }
    });
  }

  /**
   * Answer `mcpServer/elicitation/request` with `handler` (the only way to). Without a handler every elicitation is
   * answered `cancel`; a handler that throws, or answers with something that is not an `ElicitationResponse`, is
   * answered `cancel` too. Returns the function that removes the handler.
   */
  onElicitation(handler: ElicitationHandler): () => void {
    const remove = this.rpc.onRequest(
      ELICITATION,
      (request, context) => {
        const typed = elicitationOfMode(request);
        return typed === undefined ? CANCEL : handler(typed, context);
      },
      CANCEL,
    );
    return () => {
      if (remove()) this.answerElicitationsCancel();
    };
  }

  /** End the connection (stdin EOF for a sidecar) and resolve once it has ended; no restart follows. */
  async close(): Promise<void> {
    this.closing = true;
    this.supervisor?.stop();
    if (this.rpc.isOpen) await this.rpc.close();
    if (this.state !== "closed") this.finish(lost("the client is closed"));
    await this.closedPromise;
  }

  private call(
    method: string,
    params: unknown,
    options: RequestOptions,
  ): Promise<unknown> {
    return this.rpc.request(method, params, {
      ...options,
      after: this.whenReady(),
    });
  }

  private attach(transport: Transport): void {
    this.rpc.connect(transport);
  }

  /** Elicitations with no handler are declined: the daemon's call goes on without the user's input. */
  private answerElicitationsCancel(): void {
    this.rpc.onRequest(ELICITATION, () => CANCEL, CANCEL);
  }

  private async handshake(): Promise<void> {
    const hello = this.hello as NonNullable<AppServerClient["hello"]>;
    const params = {
      clientInfo: hello.clientInfo,
      ...(hello.capabilities === undefined
        ? {}
        : { capabilities: hello.capabilities }),
    };
    this.result = (await this.rpc.request("initialize", params, {
      timeoutMs: this.startTimeoutMs,
    })) as InitializeResult;
    this.rpc.notify("initialized");
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
        return new Promise((resolve, reject) =>
          this.waiters.push({ resolve, reject }),
        );
      case "new":
        return Promise.reject(
          new Error("call initialize() before any other request"),
        );
      case "closed":
        return Promise.reject(lost("the client is closed"));
    }
  }

  private emit<E extends keyof ClientEvents>(
    event: E,
    payload: ClientEvents[E],
  ): void {
    this.events.emit(event, payload);
  }

  private linkClosed(
    info: TransportClosed,
    error: AppServerErrorOf<"connectionLost">,
  ): void {
    const supervisor = this.supervisor;
    const restarting =
      !this.closing &&
      supervisor !== undefined &&
      supervisor.shouldRestart();
    this.emit("exit", { ...info, expected: this.closing, restarting });
    if (!restarting) {
      this.finish(error);
      return;
    }
    this.state = "restarting";
    supervisor.schedule((transport) => void this.restart(transport));
  }

  private async restart(transport: Transport): Promise<void> {
    this.attach(transport);
    try {
      await this.handshake();
    } catch {
      if (this.rpc.transport === transport) await this.rpc.close(); // its end schedules the next attempt
      return;
    }
    if (this.rpc.transport !== transport || !this.rpc.isOpen) return;
    this.ready();
    this.emit("restarted", this.result as InitializeResult);
  }

  private finish(error: Error): void {
    if (this.state === "closed") return;
    this.state = "closed";
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
    this.finishers.emit("finished", error);
    void (this.stderr?.close() ?? Promise.resolve()).then(() =>
      this.resolveClosed(),
    );
  }
}

function lost(message: string): AppServerErrorOf<"connectionLost"> {
  return AppServerError.local("connectionLost", message, {});
}
