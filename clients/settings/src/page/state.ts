// The page's state: the store's servers, their live status (refreshed when a start ends, a login completes or a
// catalog changes), the starts under way and how the last one of each server ended, the threads started here, and
// an activity log of every notification. It learns everything from the hub (`hub.ts`) and says what changed there.
import { AppServerError } from "mcp-app-server-client";
import type { AppServerClient, ErrorInfo, ServerRecord, ServerStatus, StartupStatusUpdated, Thread } from "mcp-app-server-client";
import { explain, serverFailure } from "./failure.js";
import type { Failure } from "./failure.js";
import type { EventHub } from "./hub.js";
import type { RuntimeStatus, StartupState } from "./labels.js";

/** How the last start of a server went, from `mcpServer/startupStatus/updated` (management connection). */
export interface Startup {
  readonly status: StartupState;
  readonly error: ErrorInfo | null;
  /** Every status of this start, in order: `starting`, then how it ended. */
  readonly trail: readonly StartupState[];
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

const MAX_ACTIVITY = 200;
const SUMMARY_CHARS = 400;

export class PageState {
  servers: ServerRecord[] = [];
  readonly statuses = new Map<string, ServerStatus>();
  readonly startups = new Map<string, Startup>();
  /** The error of the last start this page asked for, per server (its data has the details a notification lacks). */
  private readonly startErrors = new Map<string, AppServerError>();
  /** Logins under way: server name → loginId. */
  readonly logins = new Map<string, string>();
  readonly threads: Thread[] = [];
  readonly activity: Activity[] = [];
  dataDir = "";
  /** Where the daemon keeps secrets (`initialize.secretStore.backend`), for the form to say so. */
  secretBackend = "";
  private current: AppServerClient | undefined;

  constructor(private readonly hub: EventHub) {
    hub.on("connected", (client) => {
      this.current = client;
      this.dataDir = client.initializeResult?.dataDir ?? "";
      this.secretBackend = client.initializeResult?.secretStore.backend ?? "";
      this.startups.clear();
      this.startErrors.clear();
    });
    hub.on("mcpServer/startupStatus/updated", (update) => {
      if (update.threadId === null) this.startupChanged(update);
    });
    hub.on("mcpServer/oauthLogin/completed", (done) => {
      if (this.logins.get(done.name) === done.loginId) this.logins.delete(done.name);
      void this.refreshStatuses();
    });
    hub.on("mcp:tools_updated", (update) => {
      if (update.threadId === null) void this.refreshStatuses();
    });
    hub.on("notification", ({ method, params }) => this.log(method, params));
    hub.on("clientError", (error) => this.log("client error", explain(error).sentence));
  }

  /** The connection the page's requests go to. */
  get client(): AppServerClient {
    if (this.current === undefined) throw new Error("the page is not connected to the daemon yet");
    return this.current;
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
    this.hub.changed("servers");
  }

  /**
   * Start a server on the management connection; the row follows its startup notifications (starting →
   * ready/failed). Resolves with why it did not start, or `undefined` once it is ready; never throws.
   */
  async start(name: string): Promise<Failure | undefined> {
    this.startErrors.delete(name);
    try {
      await this.client.request("mcpServer/start", { name });
      return undefined;
    } catch (error) {
      if (!(error instanceof AppServerError)) return explain(error, `start ${name}`);
      this.startErrors.set(name, error);
      this.hub.changed("servers");
      return serverFailure(name, error, { started: true, stderrTail: this.statuses.get(name)?.stderrTail });
    } finally {
      await this.refreshStatuses().catch(() => undefined);
    }
  }

  /** Forget how the last start of `name` went (it was stopped or deleted). */
  forgetStart(name: string): void {
    this.startups.delete(name);
    this.startErrors.delete(name);
  }

  /** The status a row shows: a start under way wins over the last status read. */
  displayStatus(name: string): RuntimeStatus {
    const startup = this.startups.get(name);
    const row = this.statuses.get(name);
    if (startup?.status === "starting") return "starting";
    return row?.runtimeStatus ?? (startup?.status === "failed" ? "failed" : "notStarted");
  }

  /** Why a server is not running, as a sentence: its last start's error, else its status row's. */
  failure(name: string): Failure | undefined {
    const startup = this.startups.get(name);
    if (startup?.status === "starting") return undefined;
    const row = this.statuses.get(name);
    if (row?.runtimeStatus === "connected") return undefined;
    const stderrTail = row?.stderrTail;
    const asked = this.startErrors.get(name);
    if (asked !== undefined) return serverFailure(name, asked, { started: true, stderrTail });
    if (startup?.status === "failed" && startup.error !== null) {
      return serverFailure(name, startup.error, { started: true, stderrTail });
    }
    const last = row?.lastError;
    return last === undefined ? undefined : serverFailure(name, last, { started: false, stderrTail });
  }

  addThread(thread: Thread): void {
    this.threads.unshift(thread);
    this.hub.changed("threads");
  }

  log(method: string, params: unknown): void {
    const text = typeof params === "string" ? params : JSON.stringify(params);
    this.activity.unshift({ at: new Date(), method, summary: text.slice(0, SUMMARY_CHARS) });
    this.activity.length = Math.min(this.activity.length, MAX_ACTIVITY);
    this.hub.changed("activity");
  }

  private startupChanged(update: StartupStatusUpdated): void {
    const now = performance.now();
    const previous = this.startups.get(update.name);
    const fresh = update.status === "starting" || previous === undefined;
    if (update.status === "starting") this.startErrors.delete(update.name);
    this.startups.set(update.name, {
      status: update.status,
      error: update.error,
      trail: fresh ? [update.status] : [...previous.trail, update.status],
      ms: fresh ? undefined : now - previous.since,
      since: fresh ? now : previous.since,
    });
    this.hub.changed("servers");
    if (update.status !== "starting") void this.refreshStatuses();
  }
}
