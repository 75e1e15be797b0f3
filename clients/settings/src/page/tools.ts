// The tools browser: every tool of the running servers (`mcpTool/list`), or a search (`mcpTool/search`): keywords,
// `+term` for a required term, or `select:mcp__a__b,mcp__c__d` for exactly those tools (unknown ones are named).
// These are the management connection's tools, and it answers no forms: a server may offer some tools only to
// clients that do, as threads' connections do. The tab says so, and "Compare with a thread" asks a short-lived
// thread what it gets, so that no tool a thread would get is hidden without a reason.
import type { ToolView } from "mcp-app-server-client";
import type { PageState } from "./state.js";
import type { Banner } from "./banner.js";
import { boundedJson, h, replace } from "./dom.js";
import { explain, failureView } from "./failure.js";
import type { ViewContext } from "./tabs.js";

/** The name of the thread a comparison starts (and archives once it has listed its tools). */
const CHECK_THREAD_NAME = "settings: tools check";

export class ToolsView {
  readonly element: HTMLElement;
  private readonly query = h("input", { type: "search", id: "tool-query", spellcheck: "false", "aria-describedby": "tool-query-hint" });
  private readonly server = h("select", { id: "tool-server" });
  private readonly compareButton = h("button", { type: "button" }, "Compare with a thread");
  private readonly comparison = h("div", { "data-role": "thread-comparison", "aria-live": "polite" });
  private readonly results = h("div", { className: "results", "data-role": "tool-results", "aria-live": "polite" });
  /** By server: the tools a thread got that this list does not show, for the servers compared so far. */
  private readonly threadOnly = new Map<string, ToolView[]>();
  private readonly app: PageState;
  private readonly banner: Banner;

  constructor({ app, hub, banner }: ViewContext) {
    this.app = app;
    this.banner = banner;
    this.element = h(
      "section",
      { className: "view", "aria-labelledby": "tools-heading" },
      h("h2", { id: "tools-heading" }, "Tools"),
      h(
        "form",
        {
          role: "search",
          className: "toolbar",
          onsubmit: (event: Event) => {
            event.preventDefault();
            void this.load();
          },
        },
        h("label", { for: "tool-query" }, "Search tools"),
        this.query,
        h("label", { for: "tool-server" }, "Server"),
        this.server,
        h("button", { type: "submit", className: "primary" }, "Search"),
      ),
      h(
        "p",
        { className: "hint", id: "tool-query-hint" },
        "Keywords (",
        h("code", null, "+term"),
        " must match), or ",
        h("code", null, "select:mcp__server__tool,…"),
        " for exactly those tools. Empty: every tool.",
      ),
      h(
        "div",
        { className: "note-box", role: "note", "data-role": "tools-scope" },
        h(
          "p",
          null,
          "These are the tools the settings page's own connection sees. That connection answers no forms (elicitation), " +
            "and a server may offer some tools only to clients that do: a thread's connection does, so a thread may get " +
            "more tools than listed here.",
        ),
        h("div", { className: "actions" }, this.compareButton, h("span", { className: "hint" }, "Starts a short-lived thread with the running servers (or the chosen one), lists its tools, and archives it.")),
        this.comparison,
      ),
      this.results,
    );
    this.server.addEventListener("change", () => void this.load());
    this.compareButton.addEventListener("click", () => void this.compare());
    hub.on("servers", () => this.fillServers());
    const changed = (server: string): void => {
      if (this.threadOnly.delete(server)) this.renderComparison();
      if (this.query.value.trim() === "") void this.load();
    };
    hub.on("mcpServer/startupStatus/updated", (update) => {
      if (update.threadId === null && update.status !== "starting") changed(update.name);
    });
    hub.on("mcp:tools_updated", (update) => {
      if (update.threadId === null) changed(update.server);
    });
  }

  /** Called when the tab is shown. */
  shown(): void {
    void this.load();
  }

  private fillServers(): void {
    const chosen = this.server.value;
    replace(
      this.server,
      h("option", { value: "" }, "all servers"),
      this.app.servers.map((server) => h("option", { value: server.name, selected: server.name === chosen }, server.name)),
    );
  }

  private async load(): Promise<void> {
    const query = this.query.value.trim();
    const server = this.server.value;
    try {
      if (query === "") {
        const tools: ToolView[] = [];
        for await (const tool of this.app.client.paginate("mcpTool/list", server === "" ? {} : { server })) tools.push(tool);
        const extra = [...this.threadOnly.entries()].filter(([name]) => server === "" || name === server).flatMap(([, list]) => list);
        replace(this.results, this.list(tools, extra, undefined, "No tools: start a server to see its tools."));
      } else {
        const found = await this.app.client.request("mcpTool/search", { query, limit: 100 });
        const tools = server === "" || query.startsWith("select:") ? found.data : found.data.filter((t) => t.server === server);
        replace(this.results, this.list(tools, [], found.missing, "No tool matches."));
      }
    } catch (error) {
      replace(this.results, failureView(explain(error)));
    }
  }

  /** Ask a thread of the running servers (or the chosen one) which tools it gets, then archive it. */
  private async compare(): Promise<void> {
    this.banner.clear();
    const chosen = this.server.value;
    const servers = [...this.app.statuses.values()]
      .filter((row) => row.runtimeStatus === "connected" && (chosen === "" || row.name === chosen))
      .map((row) => row.name);
    if (servers.length === 0) {
      this.banner.say("info", chosen === "" ? "No server is running: start one to compare." : `${chosen} is not running: start it to compare.`);
      return;
    }
    this.compareButton.disabled = true;
    replace(this.comparison, h("p", { className: "meta" }, `Starting a thread with ${servers.join(", ")}…`));
    await this.banner.attempt("compare with a thread", async () => {
      const { thread } = await this.app.client.request("thread/start", { servers, name: CHECK_THREAD_NAME });
      try {
        const seen = await this.app.client.request("mcpTool/listForContext", { threadId: thread.id, includeDeferred: true });
        for (const name of servers) {
          const listed = new Set<string>();
          for await (const tool of this.app.client.paginate("mcpTool/list", { server: name })) listed.add(tool.name);
          this.threadOnly.set(
            name,
            seen.data.filter((tool) => tool.server === name && !listed.has(tool.name)),
          );
        }
      } finally {
        await this.app.client.request("thread/archive", { threadId: thread.id });
      }
    });
    this.compareButton.disabled = false;
    this.renderComparison();
    await this.load();
  }

  /** What the comparisons found, by server. */
  private renderComparison(): void {
    const compared = [...this.threadOnly.entries()];
    if (compared.length === 0) {
      replace(this.comparison);
      return;
    }
    replace(
      this.comparison,
      h(
        "ul",
        { className: "plain comparison" },
        compared.map(([server, tools]) =>
          h(
            "li",
            { "data-compared": server, "data-thread-only": tools.length },
            tools.length === 0
              ? `${server}: a thread gets the same tools as listed here.`
              : [
                  `${server} offers a thread ${tools.length} more tool${tools.length === 1 ? "" : "s"} than this connection gets: `,
                  tools.map((tool, index) => [index === 0 ? "" : ", ", h("code", null, tool.tool)]),
                  " (listed below, marked “thread only”).",
                ],
          ),
        ),
      ),
    );
  }

  private list(
    tools: readonly ToolView[],
    threadOnly: readonly ToolView[],
    missing: readonly string[] | undefined,
    empty: string,
  ): HTMLElement {
    const shown = [...tools.map((tool) => ({ tool, threadOnly: false })), ...threadOnly.map((tool) => ({ tool, threadOnly: true }))];
    return h(
      "div",
      null,
      h(
        "p",
        { className: "meta", "data-role": "tool-count" },
        threadOnly.length === 0
          ? `${tools.length} tool(s)`
          : `${tools.length} tool(s) on this connection, ${tools.length + threadOnly.length} for a thread`,
      ),
      missing === undefined || missing.length === 0
        ? null
        : h("p", { className: "error", "data-role": "tool-missing" }, `Not found: ${missing.join(", ")}`),
      shown.length === 0
        ? h("p", { className: "empty" }, empty)
        : h(
            "ul",
            { className: "tools" },
            shown.map(({ tool, threadOnly: onlyThread }) =>
              h(
                "li",
                { "data-tool": tool.name, "data-thread-only": onlyThread ? "true" : "false" },
                h(
                  "details",
                  null,
                  h(
                    "summary",
                    null,
                    h("code", { className: "name" }, tool.name),
                    tool.title === undefined ? null : ` ${tool.title}`,
                    onlyThread
                      ? h("span", { className: "badge warn", title: "Offered to a thread's connection, which answers forms; not to this one." }, "thread only")
                      : null,
                    tool.deferred ? h("span", { className: "badge" }, "deferred") : null,
                    tool.alwaysVisible ? h("span", { className: "badge" }, "always visible") : null,
                    tool.annotations?.readOnlyHint ? h("span", { className: "badge" }, "read-only") : null,
                    tool.annotations?.destructiveHint ? h("span", { className: "badge warn" }, "destructive") : null,
                    tool.description === undefined ? null : h("span", { className: "description" }, tool.description),
                  ),
                  onlyThread
                    ? h("p", { className: "note" }, `${tool.server} offers this tool only to a thread's connection (which answers forms); the settings page's connection does not get it.`)
                    : null,
                  h("h4", null, "Input schema"),
                  boundedJson(tool.inputSchema, 4096),
                  tool.outputSchema === undefined ? null : [h("h4", null, "Output schema"), boundedJson(tool.outputSchema, 4096)],
                  tool.annotations === undefined ? null : [h("h4", null, "Annotations (hints; they grant nothing)"), boundedJson(tool.annotations, 2048)],
                ),
              ),
            ),
          ),
    );
  }
}
