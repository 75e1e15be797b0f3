// The page's one event hub: the only module that listens to the client. It forwards every notification the daemon
// sends (typed by the generated protocol), says when a connection is ready or lost, and carries the page's own
// topics (its state changed); views and the page state subscribe here and never to a client, so a reconnect is
// one `attach`.
import type {
  AppServerClient,
  ElicitationHandler,
  ServerNotificationParamsByMethod,
} from "mcp-app-server-client";

/** The daemon's notifications, by method. */
export type Notifications = ServerNotificationParamsByMethod;
export type NotificationMethod = keyof Notifications;

/** One notification, whichever it is (for the activity log). */
export type AnyNotification = { [M in NotificationMethod]: { readonly method: M; readonly params: Notifications[M] } }[NotificationMethod];

/** The page's own topics: what changed in the page state (`state.ts`), for the views that show it. */
export interface PageTopics {
  /** Stored servers or their live status. */
  readonly servers: undefined;
  /** The threads started in this page. */
  readonly threads: undefined;
  /** The activity log. */
  readonly activity: undefined;
}

/** Everything the hub carries. */
export interface HubEvents extends Notifications, PageTopics {
  /** A connection is initialized: the page's requests go to this client from now on. */
  readonly connected: AppServerClient;
  /** The connection ended (the host or the daemon went away); the page reconnects. */
  readonly disconnected: string;
  /** Something the client could not hand to a caller (a notification that failed its schema, …). */
  readonly clientError: Error;
  /** Every notification, after its own event. */
  readonly notification: AnyNotification;
}

export type HubEvent = keyof HubEvents;

/** Every notification the daemon sends: a new one in the protocol fails the build until the page forwards it. */
const FORWARDED = {
  "mcp:resource_updated": true,
  "mcp:resources_updated": true,
  "mcp:tools_updated": true,
  "mcpServer/elicitation/completed": true,
  "mcpServer/oauthLogin/completed": true,
  "mcpServer/startupStatus/updated": true,
  "mcpServer/task/updated": true,
  "mcpServer/tool/progress": true,
  "serverRequest/resolved": true,
} as const satisfies Record<NotificationMethod, true>;

type Listener = (payload: never) => void;

export class EventHub {
  private readonly listeners = new Map<HubEvent, Set<Listener>>();
  private detach: (() => void) | undefined;

  /** Listen to one event; returns the function that stops listening. */
  on<E extends HubEvent>(event: E, listener: (payload: HubEvents[E]) => void): () => void {
    let set = this.listeners.get(event);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(event, set);
    }
    const stored = listener as Listener;
    set.add(stored);
    return () => set.delete(stored);
  }

  /** Tell the views a page topic changed. */
  changed(topic: keyof PageTopics): void {
    this.emit(topic, undefined);
  }

  /** Make `client` the page's connection: its notifications, its end and its elicitations go through the hub. */
  attach(client: AppServerClient, elicitation: ElicitationHandler): void {
    this.detach?.();
    const stops = (Object.keys(FORWARDED) as NotificationMethod[]).map((method) =>
      client.on(method, (params) => this.forward(method, params)),
    );
    stops.push(
      client.on("error", (error) => this.emit("clientError", error)),
      client.on("exit", (exit) => {
        this.detach?.();
        this.detach = undefined;
        this.emit("disconnected", exit.stderrTail || "the connection closed");
      }),
      client.onElicitation(elicitation),
    );
    this.detach = () => {
      for (const stop of stops) stop();
    };
    this.emit("connected", client);
  }

  private forward<M extends NotificationMethod>(method: M, params: Notifications[M]): void {
    this.emit(method, params as HubEvents[M]);
    this.emit("notification", { method, params } as AnyNotification);
  }

  /** Each listener runs even when one before it throws (that error is reported as the page's own). */
  private emit<E extends HubEvent>(event: E, payload: HubEvents[E]): void {
    for (const listener of [...(this.listeners.get(event) ?? [])]) {
      try {
        (listener as (payload: HubEvents[E]) => void)(payload);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}
