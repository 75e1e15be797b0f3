// The page's state and its typed event bridge: the store's servers, their live status (refreshed when a startup
// ends, a login completes or a catalog changes), the threads started here, and an activity log of every
// notification. Views read it and listen to its topics; only this module listens to the client's notifications.
import type {
  AppServerClient,
  ErrorInfo,
  ServerRecord,
  ServerStatus,
  StartupStatusUpdated,
  Thread,
} from "mcp-app-server-client";
import { describeError } from "./dom.js";

/** What changed, for the views that show it. */
export type Topic = "servers" | "threads" | "activity" | "resources" | "tools" | "notice";

/** How the last start of a server went, from `mcpServer/startupStatus/updated` (management connection). */
export interface Startup {
  readonly status: StartupStatusUpdated["status"];
  readonly error: ErrorInfo | null;
  /** Every status of this start, in order: `starting`, then how it ended. */
  readonly trail: readonly string[];
  /** How long it took, once it ended. */
  readonly ms: number | undefined;
  readonly since: number;
}

/** One line of the activity log. */
export interface Activity {
  readonly at: Date;
  readonly method: string;
  readonly summary: string;
}

/** What the notice bar says. */
export interface Notice {
  readonly kind: "info" | "error";
  readonly text: string;
}

const MAX_ACTIVITY = 200;
const SUMMARY_CHARS = 400;

export class App {
  servers: ServerRecord[] = [];
  readonly statuses = new Map<string, ServerStatus>();
  readonly startups = new Map<string, Startup>();
  /** Logins under way: server name → loginId. */
  readonly logins = new Map<string, string>();
  readonly threads: Thread[] = [];
  readonly activity: Activity[] = [];
  notice: Notice | undefined;
  dataDir = "";
  private readonly listeners = new Map<Topic, Set<() => void>>();

  constructor(public client: AppServerClient) {}

  /** Listen to the client's notifications (call once per client). */
  bridge(client: AppServerClient): void {
    this.client = client;
    this.dataDir = client.initializeResult?.dataDir ?? "";
    client.on("mcpServer/startupStatus/updated", (update) => {
      this.log("mcpServer/startupStatus/updated", update);
      if (update.threadId !== null) return;
      this.startupChanged(update);
    });
    client.on("mcpServer/oauthLogin/completed", (done) => {
      this.log("mcpServer/oauthLogin/completed", done);
      if (this.logins.get(done.name) === done.loginId) this.logins.delete(done.name);
      this.say(
        done.success ? "info" : "error",
        done.success
          ? `Logged in to ${done.name}.`
          : `Login to ${done.name} failed: ${done.error?.reason ?? "unknown"}: ${done.error?.message ?? ""}`,
      );
      void this.refreshStatuses();
    });
    client.on("mcp:tools_updated", (update) => {
      this.log("mcp:tools_updated", update);
      if (update.threadId === null) void this.refreshStatuses();
      this.emit("tools");
    });
    client.on("mcp:resources_updated", (update) => {
      this.log("mcp:resources_updated", update);
      this.emit("resources");
    });
    client.on("mcp:resource_updated", (update) => this.log("mcp:resource_updated", update));
    client.on("mcpServer/tool/progress", (update) => this.log("mcpServer/tool/progress", update));
    client.on("serverRequest/resolved", (resolved) => this.log("serverRequest/resolved", resolved));
    client.on("error", (error) => this.log("client error", describeError(error)));
  }

  on(topic: Topic, listener: () => void): () => void {
    let set = this.listeners.get(topic);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(topic, set);
    }
    set.add(listener);
    return () => set.delete(listener);
  }

  emit(topic: Topic): void {
    for (const listener of [...(this.listeners.get(topic) ?? [])]) listener();
  }

  /** Show a message in the notice bar. */
  say(kind: Notice["kind"], text: string): void {
    this.notice = { kind, text };
    this.emit("notice");
  }

  /** Run an action, reporting its error in the notice bar; resolves with its result or undefined. */
  async attempt<T>(what: string, action: () => Promise<T>): Promise<T | undefined> {
    try {
      return await action();
    } catch (error) {
      this.say("error", `${what}: ${describeError(error)}`);
      return undefined;
    }
  }

  /** Reload the store and the live status of every server. */
  async refreshServers(): Promise<void> {
    const servers: ServerRecord[] = [];
    for await (const server of this.client.paginate("mcpServer/list", { limit: 100 })) servers.push(server);
    this.servers = servers;
    await this.refreshStatuses();
  }

  /** Reload the live status rows (never blocks on a server that is starting). */
  async refreshStatuses(): Promise<void> {
    const rows: ServerStatus[] = [];
    for await (const row of this.client.paginate("mcpServerStatus/list", { limit: 100 })) rows.push(row);
    this.statuses.clear();
    for (const row of rows) this.statuses.set(row.name, row);
    this.emit("servers");
  }

  /** The status a row shows: a start under way wins over the last status read. */
  displayStatus(name: string): string {
    const startup = this.startups.get(name);
    const row = this.statuses.get(name);
    if (startup?.status === "starting") return "starting";
    return row?.runtimeStatus ?? (startup?.status === "failed" ? "failed" : "notStarted");
  }

  /** The typed error a row shows: the failed start's, else the status row's last error. */
  displayError(name: string): ErrorInfo | undefined {
    const startup = this.startups.get(name);
    if (startup?.status === "failed" && startup.error !== null) return startup.error;
    return this.statuses.get(name)?.lastError;
  }

  addThread(thread: Thread): void {
    this.threads.unshift(thread);
    this.emit("threads");
  }

  log(method: string, params: unknown): void {
    const text = typeof params === "string" ? params : JSON.stringify(params);
    this.activity.unshift({ at: new Date(), method, summary: text.slice(0, SUMMARY_CHARS) });
    this.activity.length = Math.min(this.activity.length, MAX_ACTIVITY);
    this.emit("activity");
  }

  private startupChanged(update: StartupStatusUpdated): void {
    const now = performance.now();
    const previous = this.startups.get(update.name);
    const fresh = update.status === "starting" || previous === undefined;
    this.startups.set(update.name, {
      status: update.status,
      error: update.error,
      trail: fresh ? [update.status] : [...previous.trail, update.status],
      ms: fresh ? undefined : now - previous.since,
      since: fresh ? now : previous.since,
    });
    this.emit("servers");
    if (update.status !== "starting") void this.refreshStatuses().then(() => this.emit("tools"));
  }
}
