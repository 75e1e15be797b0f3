// The server list: every stored server with its live status (starting → ready/failed with the typed error, from
// `mcpServer/startupStatus/updated`), its auth state, and the actions on it: start/stop, enable, log in, edit,
// delete. Add/edit, import and sync open in the panel above the list.
import type { ServerRecord } from "mcp-app-server-client";
import type { App } from "./app.js";
import { AppsPanel } from "./apps.js";
import { h, replace } from "./dom.js";
import { ServerForm } from "./server-form.js";
import { openExternal } from "./host.js";

const AUTH_LABEL: { readonly [auth: string]: string } = {
  unknown: "unknown",
  unsupported: "none",
  notLoggedIn: "not logged in",
  bearerToken: "bearer token",
  oAuth: "OAuth",
};

const STATUS_LABEL: { readonly [status: string]: string } = {
  notStarted: "not started",
  starting: "starting",
  connected: "ready",
  authenticationRequired: "login needed",
  failed: "failed",
  cancelled: "cancelled",
  disabled: "disabled",
};

export class ServersView {
  readonly element: HTMLElement;
  private readonly panel = h("div", { className: "panel-slot" });
  private readonly body = h("tbody");
  private readonly form: ServerForm;
  private readonly apps: AppsPanel;

  constructor(private readonly app: App) {
    this.form = new ServerForm(app, this.panel);
    this.apps = new AppsPanel(app, this.panel);
    this.element = h(
      "section",
      { className: "view", "aria-labelledby": "servers-heading" },
      h("h2", { id: "servers-heading" }, "Servers"),
      h(
        "div",
        { className: "toolbar" },
        h("button", { type: "button", className: "primary", onclick: () => this.form.open() }, "Add server"),
        h("button", { type: "button", onclick: () => this.apps.openImport() }, "Import from app…"),
        h("button", { type: "button", onclick: () => this.apps.openSync() }, "Sync to apps…"),
        h("button", { type: "button", onclick: () => void app.attempt("Refresh", () => app.refreshServers()) }, "Refresh"),
      ),
      this.panel,
      h(
        "table",
        { className: "servers" },
        h("caption", { className: "visually-hidden" }, "Stored servers and their live status"),
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            ["Server", "Transport", "Enabled", "Status", "Auth", "Tools", "Actions"].map((title) =>
              h("th", { scope: "col" }, title),
            ),
          ),
        ),
        this.body,
      ),
    );
    app.on("servers", () => this.render());
  }

  render(): void {
    const rows = this.app.servers.map((server) => this.row(server));
    if (rows.length === 0) {
      replace(this.body, h("tr", null, h("td", { colspan: 7, className: "empty" }, "No servers yet: add one or import.")));
    } else {
      replace(this.body, rows);
    }
  }

  private row(server: ServerRecord): HTMLElement {
    const app = this.app;
    const name = server.name;
    const status = app.displayStatus(name);
    const row = app.statuses.get(name);
    const error = app.displayError(name);
    const startup = app.startups.get(name);
    const config = server.config;
    const transport =
      config.type === "http"
        ? h("span", null, h("span", { className: "badge" }, "http"), " ", h("code", null, config.url))
        : h(
            "span",
            null,
            h("span", { className: "badge" }, "stdio"),
            " ",
            h("code", { title: [config.command, ...(config.args ?? [])].join(" ") }, shorten([config.command, ...(config.args ?? [])].map(baseName).join(" "), 60)),
          );
    const running = status === "connected" || status === "starting";
    const canLogIn =
      config.type === "http" &&
      (config.oauth !== undefined || row?.authStatus === "notLoggedIn" || status === "authenticationRequired");
    const loginPending = app.logins.has(name);
    const toolCount = row === undefined ? 0 : Object.keys(row.tools).length;
    return h(
      "tr",
      { "data-server": name, "data-status": status, "data-auth": row?.authStatus ?? "unknown" },
      h(
        "th",
        { scope: "row" },
        h("span", { className: "name" }, name),
        config.description === undefined ? null : h("span", { className: "description" }, config.description),
        server.source === "user" ? null : h("span", { className: "source" }, server.source),
      ),
      h("td", null, transport),
      h(
        "td",
        null,
        h("input", {
          type: "checkbox",
          checked: server.enabled,
          "aria-label": `Enable ${name}`,
          onchange: (event: Event) => {
            const enabled = (event.target as HTMLInputElement).checked;
            void app.attempt(`Enable ${name}`, async () => {
              await app.client.request("mcpServer/enabled/set", { name, enabled });
              await app.refreshServers();
            });
          },
        }),
      ),
      h(
        "td",
        { className: "status" },
        h("span", { className: `badge status-${status}`, "data-role": "status" }, STATUS_LABEL[status] ?? status),
        startup === undefined
          ? null
          : h(
              "span",
              { className: "trail", "data-role": "trail" },
              ` ${startup.trail.join(" → ")}${startup.ms === undefined ? "" : ` in ${(startup.ms / 1000).toFixed(1)} s`}`,
            ),
        error === undefined
          ? null
          : h("div", { className: "error", "data-role": "error" }, h("strong", null, error.reason), `: ${error.message}`),
        row?.stderrTail
          ? h("details", null, h("summary", null, "stderr"), h("pre", { className: "text small" }, row.stderrTail.slice(-4000)))
          : null,
      ),
      h(
        "td",
        { "data-role": "auth" },
        AUTH_LABEL[row?.authStatus ?? "unknown"] ?? row?.authStatus,
        loginPending ? h("div", { className: "note" }, "login in the browser…") : null,
      ),
      h("td", null, status === "connected" ? String(toolCount) : "—"),
      h(
        "td",
        { className: "row-actions" },
        running
          ? h("button", { type: "button", onclick: () => this.stop(name) }, "Stop")
          : h("button", { type: "button", onclick: () => this.start(name) }, "Start"),
        canLogIn ? h("button", { type: "button", onclick: () => this.logIn(name) }, "Log in") : null,
        h("button", { type: "button", onclick: () => this.form.open(server) }, "Edit"),
        h("button", { type: "button", className: "danger", onclick: () => this.remove(name) }, "Delete"),
      ),
    );
  }

  private start(name: string): void {
    void this.app.attempt(`Start ${name}`, async () => {
      await this.app.client.request("mcpServer/start", { name });
      this.app.say("info", `${name} is ready.`);
    });
  }

  private stop(name: string): void {
    void this.app.attempt(`Stop ${name}`, async () => {
      await this.app.client.request("mcpServer/stop", { name });
      this.app.startups.delete(name);
      await this.app.refreshStatuses();
    });
  }

  private logIn(name: string): void {
    void this.app.attempt(`Log in to ${name}`, async () => {
      const login = await this.app.client.request("mcpServer/oauth/login", { name });
      this.app.logins.set(name, login.loginId);
      this.app.emit("servers");
      await openExternal(login.authorizationUrl);
      this.app.say("info", `Finish the login to ${name} in your browser.`);
    });
  }

  private remove(name: string): void {
    if (!window.confirm(`Delete the server ${name}? Its stored secrets and credentials are deleted too.`)) return;
    void this.app.attempt(`Delete ${name}`, async () => {
      await this.app.client.request("mcpServer/delete", { name });
      this.app.startups.delete(name);
      await this.app.refreshServers();
    });
  }
}

function baseName(part: string): string {
  return part.includes("/") ? (part.split("/").pop() ?? part) : part;
}

function shorten(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`;
}
