// The server list: every stored server with its live status (starting → ready, or failed with a sentence saying
// why, from `mcpServer/startupStatus/updated` and the typed error), its auth state, and the actions on it:
// start/stop, enable (which starts it), log in, edit, delete. Add/edit, import and sync open in the panel above the
// list.
import type { ServerRecord } from "mcp-app-server-client";
import type { PageState } from "./state.js";
import { ImportersPanel } from "./importers.js";
import type { Banner } from "./banner.js";
import { h, replace } from "./dom.js";
import { explainInfo, failureView } from "./failure.js";
import { openExternal } from "./host.js";
import { AUTH_STATUS_LABEL, RUNTIME_STATUS_LABEL, STARTUP_STATE_LABEL } from "./labels.js";
import { ServerForm } from "./server-form.js";
import type { ViewContext } from "./tabs.js";

export class ServersView {
  readonly element: HTMLElement;
  private readonly panel = h("div", { className: "panel-slot" });
  private readonly body = h("tbody");
  private readonly form: ServerForm;
  private readonly apps: ImportersPanel;

  private readonly app: PageState;
  private readonly banner: Banner;

  constructor({ app, hub, banner }: ViewContext) {
    this.app = app;
    this.banner = banner;
    this.form = new ServerForm(app, banner, this.panel);
    this.apps = new ImportersPanel(app, banner, this.panel);
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
        h("button", { type: "button", onclick: () => void banner.attempt("refresh the servers", () => app.refreshServers()) }, "Refresh"),
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
    hub.on("servers", () => this.render());
    hub.on("mcpServer/oauthLogin/completed", (done) => {
      if (done.success) this.banner.say("info", `Logged in to ${done.name}.`);
      else if (done.error !== null) this.banner.say("error", explainInfo(done.error, `log in to ${done.name}`));
      else this.banner.say("error", `The login to ${done.name} failed.`);
    });
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
    const failure = app.failure(name);
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
            void this.banner.attempt(`${enabled ? "enable" : "disable"} ${name}`, async () => {
              await app.client.request("mcpServer/enabled/set", { name, enabled });
              await app.refreshServers();
              if (!enabled) return;
              const failure = await app.start(name);
              this.banner.say(failure === undefined ? "info" : "error", failure ?? `${name} is enabled and ready.`);
            });
          },
        }),
      ),
      h(
        "td",
        { className: "status" },
        h("span", { className: `badge status-${status}`, "data-role": "status" }, RUNTIME_STATUS_LABEL[status]),
        startup === undefined
          ? null
          : h(
              "span",
              { className: "trail", "data-role": "trail" },
              ` ${startup.trail.map((state) => STARTUP_STATE_LABEL[state]).join(" → ")}${startup.ms === undefined ? "" : ` in ${(startup.ms / 1000).toFixed(1)} s`}`,
            ),
        failure === undefined ? null : h("div", { className: "error", "data-role": "error" }, failureView(failure)),
        row?.stderrTail
          ? h("details", null, h("summary", null, "stderr"), h("pre", { className: "text small" }, row.stderrTail.slice(-4000)))
          : null,
      ),
      h(
        "td",
        { "data-role": "auth" },
        AUTH_STATUS_LABEL[row?.authStatus ?? "unknown"],
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

  /** The Start button: the row follows the start; the banner says how it ended. */
  private start(name: string): void {
    void this.app.start(name).then((failure) => this.banner.say(failure === undefined ? "info" : "error", failure ?? `${name} is ready.`));
  }

  private stop(name: string): void {
    void this.banner.attempt(`stop ${name}`, async () => {
      await this.app.client.request("mcpServer/stop", { name });
      this.app.forgetStart(name);
      await this.app.refreshStatuses();
    });
  }

  private logIn(name: string): void {
    void this.banner.attempt(`log in to ${name}`, async () => {
      const login = await this.app.client.request("mcpServer/oauth/login", { name });
      this.app.logins.set(name, login.loginId);
      this.render();
      await openExternal(login.authorizationUrl);
      if (this.app.logins.get(name) === login.loginId) this.banner.say("info", `Finish the login to ${name} in your browser.`);
    });
  }

  private remove(name: string): void {
    if (!window.confirm(`Delete the server ${name}? Its stored secrets and credentials are deleted too.`)) return;
    void this.banner.attempt(`delete ${name}`, async () => {
      await this.app.client.request("mcpServer/delete", { name });
      this.app.forgetStart(name);
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
