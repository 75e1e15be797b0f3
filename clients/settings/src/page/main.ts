// The settings page: connects to the daemon through the host's bridge (reconnecting if the daemon or the host
// restarts), and lays out the tabs of `tabs.ts`, each with its own banner, around the one global elicitation modal.
import { PageState } from "./state.js";
import { Banner } from "./banner.js";
import { connect, takeSession } from "./connection.js";
import { h, replace } from "./dom.js";
import { ElicitationModal } from "./elicitation.js";
import { explain } from "./failure.js";
import { useToken } from "./host.js";
import { EventHub } from "./hub.js";
import { TABS } from "./tabs.js";
import type { View } from "./tabs.js";

const RETRY_MS = [500, 1000, 2000, 4000, 8000];

async function main(): Promise<void> {
  const root = document.getElementById("app");
  if (root === null) return;
  const session = await takeSession();
  if ("problem" in session) {
    replace(root, h("p", { className: "error", "data-role": "session-problem" }, session.problem));
    return;
  }
  const token = session.token;
  useToken(token);

  const status = h("span", { className: "connection", "data-connection": "connecting", role: "status" }, "connecting…");
  const dataDir = h("span", { className: "meta" });
  const hub = new EventHub();
  const app = new PageState(hub);
  const modal = new ElicitationModal(document.body);
  modal.onAnswered = (request, answer) =>
    app.log("elicitation answered", { server: request.serverName, action: typeof answer === "string" ? answer : answer.action });
  const tabs = TABS.map((tab) => {
    const banner = new Banner(tab.id);
    return { ...tab, banner, view: tab.create({ app, hub, banner }) };
  });
  layout(root, h("div", { className: "header-meta" }, status, dataDir), tabs);
  const serversBanner = tabs.find((tab) => tab.id === "servers")?.banner;

  const setStatus = (state: "connecting" | "ready" | "lost", text: string): void => {
    status.dataset.connection = state;
    status.textContent = text;
  };
  const reconnect = async (attempt: number): Promise<void> => {
    try {
      const client = await connect(token);
      hub.attach(client, modal.handle);
      dataDir.textContent = `data dir ${app.dataDir}`;
      const info = client.initializeResult?.serverInfo;
      setStatus("ready", `connected to ${info?.name ?? "daemon"} ${info?.version ?? ""}`);
      await serversBanner?.attempt("load the servers", () => app.refreshServers());
    } catch (error) {
      const delay = RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)] ?? 8000;
      setStatus("lost", `not connected (${explain(error).sentence}); retrying in ${delay / 1000} s`);
      setTimeout(() => void reconnect(attempt + 1), delay);
    }
  };
  hub.on("disconnected", () => {
    setStatus("lost", "disconnected — reconnecting…");
    void reconnect(0);
  });
  await reconnect(0);
}

/** The tab list, one panel per tab (its banner above its view), and the keyboard of a tablist. */
function layout(
  root: HTMLElement,
  meta: HTMLElement,
  tabs: readonly { readonly id: string; readonly label: string; readonly banner: Banner; readonly view: View }[],
): void {
  const buttons = tabs.map(({ id, label }) =>
    h("button", { type: "button", role: "tab", id: `tab-${id}`, "aria-controls": `panel-${id}`, "data-tab": id }, label),
  );
  const panels = tabs.map(({ id, banner, view }) =>
    h("div", { role: "tabpanel", id: `panel-${id}`, "aria-labelledby": `tab-${id}`, tabindex: 0 }, banner.element, view.element),
  );
  const select = (index: number, focus: boolean): void => {
    buttons.forEach((button, i) => {
      button.setAttribute("aria-selected", i === index ? "true" : "false");
      button.tabIndex = i === index ? 0 : -1;
      const panel = panels[i];
      if (panel !== undefined) panel.hidden = i !== index;
    });
    if (focus) buttons[index]?.focus();
    tabs[index]?.view.shown?.();
  };
  buttons.forEach((button, index) => {
    button.addEventListener("click", () => select(index, false));
    button.addEventListener("keydown", (event) => {
      const step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
      if (event.key === "Home") select(0, true);
      else if (event.key === "End") select(buttons.length - 1, true);
      else if (step !== 0) select((index + step + buttons.length) % buttons.length, true);
    });
  });
  replace(
    root,
    h("header", null, h("h1", null, "MCP servers"), meta),
    h("nav", { role: "tablist", "aria-label": "Settings sections" }, buttons),
    h("main", null, panels),
  );
  select(0, false);
}

void main();
