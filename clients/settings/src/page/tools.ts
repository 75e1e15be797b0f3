// The tools browser: every tool of the running servers (`mcpTool/list`), or a search (`mcpTool/search`): keywords,
// `+term` for a required term, or `select:mcp__a__b,mcp__c__d` for exactly those tools (unknown ones are named).
import type { ToolView } from "mcp-app-server-client";
import type { App } from "./app.js";
import { boundedJson, describeError, errorDetails, h, replace } from "./dom.js";

export class ToolsView {
  readonly element: HTMLElement;
  private readonly query = h("input", { type: "search", id: "tool-query", spellcheck: "false", "aria-describedby": "tool-query-hint" });
  private readonly server = h("select", { id: "tool-server" });
  private readonly results = h("div", { className: "results", "data-role": "tool-results", "aria-live": "polite" });

  constructor(private readonly app: App) {
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
      this.results,
    );
    this.server.addEventListener("change", () => void this.load());
    app.on("servers", () => this.fillServers());
    app.on("tools", () => {
      if (this.query.value.trim() === "" && this.element.isConnected) void this.load();
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
        replace(this.results, this.list(tools, undefined, "No tools: start a server to see its tools."));
      } else {
        const found = await this.app.client.request("mcpTool/search", { query, limit: 100 });
        const tools = server === "" || query.startsWith("select:") ? found.data : found.data.filter((t) => t.server === server);
        replace(this.results, this.list(tools, found.missing, "No tool matches."));
      }
    } catch (error) {
      replace(this.results, h("p", { className: "error" }, describeError(error)), errorDetails(error));
    }
  }

  private list(tools: readonly ToolView[], missing: readonly string[] | undefined, empty: string): HTMLElement {
    return h(
      "div",
      null,
      h("p", { className: "meta", "data-role": "tool-count" }, `${tools.length} tool(s)`),
      missing === undefined || missing.length === 0
        ? null
        : h("p", { className: "error", "data-role": "tool-missing" }, `Not found: ${missing.join(", ")}`),
      tools.length === 0
        ? h("p", { className: "empty" }, empty)
        : h(
            "ul",
            { className: "tools" },
            tools.map((tool) =>
              h(
                "li",
                { "data-tool": tool.name },
                h(
                  "details",
                  null,
                  h(
                    "summary",
                    null,
                    h("code", { className: "name" }, tool.name),
                    tool.title === undefined ? null : ` ${tool.title}`,
                    tool.deferred ? h("span", { className: "badge" }, "deferred") : null,
                    tool.alwaysVisible ? h("span", { className: "badge" }, "always visible") : null,
                    tool.annotations?.readOnlyHint ? h("span", { className: "badge" }, "read-only") : null,
                    tool.annotations?.destructiveHint ? h("span", { className: "badge warn" }, "destructive") : null,
                    tool.description === undefined ? null : h("span", { className: "description" }, tool.description),
                  ),
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
