// The settings page: connects to the daemon through the host's bridge (reconnecting if the daemon or the host
// restarts), and lays out its views as tabs around the one global elicitation modal.
import type { AppServerClient } from "mcp-app-server-client";
import { ActivityView } from "./activity.js";
import { App } from "./app.js";
import { connect, takeSession } from "./connection.js";
import { describeError, h, replace } from "./dom.js";
import { ElicitationModal } from "./elicitation.js";
import { useToken } from "./host.js";
import { PromptsView } from "./prompts.js";
import { ResourcesView } from "./resources.js";
import { ServersView } from "./servers.js";
import { ThreadView } from "./thread.js";
import { ToolsView } from "./tools.js";

interface View {
  readonly element: HTMLElement;
  shown?(): void;
}

const RETRY_MS = [500, 1000, 2000, 4000, 8000];
const INFO_NOTICE_MS = 8000;

async function main(): Promise<void> {
  const root = document.getElementById("app");
  if (root === null) return;
  const status = h("span", { className: "connection", "data-connection": "connecting", role: "status" }, "connecting…");
  const dataDir = h("span", { className: "meta" });
  const notice = h("div", { className: "notice", "aria-live": "polite" });
  const session = await takeSession();
  if ("problem" in session) {
    replace(root, h("p", { className: "error", "data-role": "session-problem" }, session.problem));
    return;
  }
  const token = session.token;
  useToken(token);

  let app: App | undefined;
  let views: { servers: ServersView; tools: ToolsView; prompts: PromptsView; resources: ResourcesView; thread: ThreadView; activity: ActivityView };
  const modal = new ElicitationModal(document.body);

  const setStatus = (state: "connecting" | "ready" | "lost", text: string): void => {
    status.dataset.connection = state;
    status.textContent = text;
  };

  const attach = async (client: AppServerClient): Promise<void> => {
    if (app === undefined) {
      app = new App(client);
      views = {
        servers: new ServersView(app),
        tools: new ToolsView(app),
        prompts: new PromptsView(app),
        resources: new ResourcesView(app),
        thread: new ThreadView(app),
        activity: new ActivityView(app),
      };
      app.on("notice", () => {
        const current = app?.notice;
        if (current === undefined) return;
        replace(
          notice,
          h(
            "p",
            { className: `notice-${current.kind}`, role: current.kind === "error" ? "alert" : "status", "data-role": "notice" },
            current.text,
            h("button", { type: "button", className: "link", "aria-label": "Dismiss", onclick: () => replace(notice) }, "×"),
          ),
        );
        // Information fades after a while; an error stays until dismissed or replaced.
        if (current.kind === "info") {
          setTimeout(() => {
            if (app?.notice === current) replace(notice);
          }, INFO_NOTICE_MS);
        }
      });
      layout(root, status, dataDir, notice, views);
    }
    const current = app;
    current.bridge(client);
    views.resources.bridge();
    views.thread.bridge();
    client.onElicitation(modal.handle);
    modal.onAnswered = (request, answer) =>
      current.log("elicitation answered", { server: request.serverName, action: typeof answer === "string" ? answer : answer.action });
    client.on("exit", () => {
      setStatus("lost", "disconnected — reconnecting…");
      void reconnect(0);
    });
    dataDir.textContent = `data dir ${current.dataDir}`;
    setStatus("ready", `connected to ${client.initializeResult?.serverInfo.name ?? "daemon"} ${client.initializeResult?.serverInfo.version ?? ""}`);
    await current.attempt("Load the servers", () => current.refreshServers());
  };

  const reconnect = async (attempt: number): Promise<void> => {
    try {
      await attach(await connect(token));
    } catch (error) {
      const delay = RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)] ?? 8000;
      setStatus("lost", `not connected (${describeError(error)}); retrying in ${delay / 1000} s`);
      setTimeout(() => void reconnect(attempt + 1), delay);
    }
  };
  await reconnect(0);
}

function layout(
  root: HTMLElement,
  status: HTMLElement,
  dataDir: HTMLElement,
  notice: HTMLElement,
  views: { readonly [name: string]: View },
): void {
  const names: { readonly [name: string]: string } = {
    servers: "Servers",
    tools: "Tools",
    prompts: "Prompts",
    resources: "Resources",
    thread: "Thread",
    activity: "Activity",
  };
  const keys = Object.keys(names);
  const tabs = keys.map((key) =>
    h("button", { type: "button", role: "tab", id: `tab-${key}`, "aria-controls": `panel-${key}`, "data-tab": key }, names[key] ?? key),
  );
  const panels = keys.map((key) =>
    h("div", { role: "tabpanel", id: `panel-${key}`, "aria-labelledby": `tab-${key}`, tabindex: 0 }, views[key]?.element),
  );
  const select = (index: number, focus: boolean): void => {
    tabs.forEach((tab, i) => {
      tab.setAttribute("aria-selected", i === index ? "true" : "false");
      tab.tabIndex = i === index ? 0 : -1;
      const panel = panels[i];
      if (panel !== undefined) panel.hidden = i !== index;
    });
    if (focus) tabs[index]?.focus();
    views[keys[index] ?? ""]?.shown?.();
  };
  tabs.forEach((tab, index) => {
    tab.addEventListener("click", () => select(index, false));
    tab.addEventListener("keydown", (event) => {
      const step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
      if (event.key === "Home") select(0, true);
      else if (event.key === "End") select(tabs.length - 1, true);
      else if (step !== 0) select((index + step + tabs.length) % tabs.length, true);
    });
  });
  replace(
    root,
    h("header", null, h("h1", null, "MCP servers"), h("div", { className: "header-meta" }, status, dataDir)),
    notice,
    h("nav", { role: "tablist", "aria-label": "Settings sections" }, tabs),
    h("main", null, panels),
  );
  select(0, false);
}

void main();
