// A small thread view, the one place the page executes a tool (tools run only in a thread, SPEC §3): start a
// thread with some servers, call one of its tools with JSON arguments (starting from its schema's defaults), and
// see the result with its projection. An elicitation during the call opens the global modal; progress (with its
// numbers and message) and how each form was resolved show here. A tool with an MCP Apps view opens it beside the
// call (app-view.ts): the view gets the call's input now and its result when it ends.
import { hasAppView } from "mcp-app-server-client";
import type { Thread, ToolCallResult, ToolView } from "mcp-app-server-client";
import { defaultArguments } from "./arguments.js";
import type { PageState } from "./state.js";
import { AppViewFrame } from "./app-view.js";
import type { Banner } from "./banner.js";
import { contentBlock, projection } from "./content.js";
import { boundedJson, field, h, replace, uid } from "./dom.js";
import { explain, failureView } from "./failure.js";
import { TaskList } from "./tasks.js";
import { REASON_LABEL, RESOLVED_ACTION_LABEL, RUNTIME_STATUS_LABEL } from "./labels.js";
import type { ViewContext } from "./tabs.js";

export class ThreadView {
  readonly element: HTMLElement;
  private readonly serverChoices = h("div", { className: "choices", "data-role": "thread-servers" });
  private readonly threadName = h("input", { type: "text", id: "thread-name", placeholder: "settings page" });
  private readonly threadInfo = h("div", { "data-role": "thread-info" });
  private readonly tool = h("select", { id: "thread-tool" });
  private readonly args = h("textarea", { id: "thread-args", rows: 5, spellcheck: "false" }, "{}");
  private readonly timeout = h("input", { type: "number", id: "thread-timeout", min: 1, max: 300000 });
  private readonly callButton = h("button", { type: "submit", className: "primary", disabled: true }, "Call tool");
  private readonly cancelButton = h("button", { type: "button", disabled: true }, "Cancel call");
  private readonly backgroundButton = h(
    "button",
    { type: "button", disabled: true, "data-role": "call-background" },
    "Run in background",
  );
  private readonly taskList: TaskList;
  private readonly argsHint = h("p", { className: "hint field-hint", id: uid("args-hint"), "data-role": "args-hint" });
  private readonly progress = h("progress", { "data-role": "progress", max: 1, value: 0 });
  private readonly progressText = h("span", { className: "meta", "data-role": "progress-text" });
  private readonly progressBox = h("span", { className: "progress", hidden: true }, this.progress, this.progressText);
  private readonly output = h("div", { className: "result", "data-role": "call-result", "aria-live": "polite" });
  private readonly resolved = h("ul", { className: "plain", "data-role": "resolved" });
  private readonly viewBox = h("div", { "data-role": "app-views" });
  private view: AppViewFrame | undefined;
  private thread: Thread | undefined;
  private tools: ToolView[] = [];
  private inFlight: AbortController | undefined;

  private readonly app: PageState;
  private readonly banner: Banner;

  constructor({ app, hub, banner }: ViewContext) {
    this.app = app;
    this.banner = banner;
    this.taskList = new TaskList(
      () => this.app.client,
      (name, result) => replace(this.output, result instanceof HTMLElement ? result : renderResult(name, result)),
    );
    this.element = h(
      "section",
      { className: "view", "aria-labelledby": "thread-heading" },
      h("h2", { id: "thread-heading" }, "Thread"),
      h(
        "p",
        { className: "hint" },
        "Tools run only inside a thread. Start one with some servers, then call a tool: a form a server asks for opens in a dialog.",
      ),
      h(
        "form",
        {
          className: "panel",
          "aria-label": "Start a thread",
          onsubmit: (event: Event) => {
            event.preventDefault();
            void this.start();
          },
        },
        h("fieldset", { className: "inline" }, h("legend", null, "Servers of the thread"), this.serverChoices),
        field("Thread name", this.threadName),
        h("button", { type: "submit", className: "primary" }, "Start thread"),
      ),
      this.threadInfo,
      h(
        "form",
        {
          className: "panel",
          "aria-label": "Call a tool",
          onsubmit: (event: Event) => {
            event.preventDefault();
            void this.call();
          },
        },
        field("Tool", this.tool),
        field("Arguments (JSON)", this.args),
        this.argsHint,
        field("Timeout (ms)", this.timeout, "Empty: the server's tool timeout."),
        h("div", { className: "actions" }, this.callButton, this.backgroundButton, this.cancelButton, this.progressBox),
      ),
      this.output,
      h("h3", null, "Background calls"),
      this.taskList.element,
      this.viewBox,
      h("h3", null, "Forms answered in this thread"),
      this.resolved,
    );
    this.tool.addEventListener("change", () => this.prefillArguments());
    this.cancelButton.addEventListener("click", () => this.inFlight?.abort());
    this.backgroundButton.addEventListener("click", () => void this.callInBackground());
    hub.on("mcpServer/task/updated", (update) => this.taskList.update(update.threadId, update.task));
    this.args.setAttribute("aria-describedby", this.argsHint.id);
    hub.on("servers", () => this.fillServers());
    window.addEventListener("pagehide", () => this.archiveCurrent());
    hub.on("mcpServer/tool/progress", (update) => {
      if (update.threadId !== this.thread?.id || this.inFlight === undefined) return;
      // The bar shows how far; the text says the numbers and what the server says it is doing.
      const numbers = update.total === undefined ? `${update.progress}` : `${update.progress} / ${update.total}`;
      const text = update.message === undefined ? numbers : `${numbers} — ${update.message}`;
      this.progressBox.hidden = false;
      if (update.total === undefined) this.progress.removeAttribute("value");
      else {
        this.progress.max = update.total;
        this.progress.value = update.progress;
      }
      this.progress.setAttribute("aria-valuetext", text);
      this.progressText.textContent = text;
    });
    hub.on("serverRequest/resolved", (resolved) => {
      if (resolved.threadId !== this.thread?.id) return;
      this.resolved.prepend(
        h(
          "li",
          { "data-action": resolved.action },
          `${new Date().toLocaleTimeString()}: ${RESOLVED_ACTION_LABEL[resolved.action]}`,
          resolved.reason === undefined
            ? ""
            : ` (${REASON_LABEL[resolved.reason]}: ${(resolved.errors ?? []).map((e) => `${e.path} ${e.message}`).join("; ")})`,
        ),
      );
    });
  }

  shown(): void {
    this.fillServers();
  }

  /** Every enabled server is ticked when it first shows up (a thread of all of them is what "Start thread" means
   * to a person); the user's unticks are kept across refreshes. */
  private fillServers(): void {
    const boxes = [...this.serverChoices.querySelectorAll<HTMLInputElement>("input[type=checkbox]")];
    const shown = new Set(boxes.map((box) => box.value));
    const unticked = new Set(boxes.filter((box) => !box.checked).map((box) => box.value));
    replace(
      this.serverChoices,
      this.app.servers
        .filter((server) => server.enabled)
        .map((server) => {
          const checked = !shown.has(server.name) || !unticked.has(server.name);
          const box = h("input", { type: "checkbox", value: server.name, id: uid("thread-server"), checked });
          return h("label", { for: box.id }, box, ` ${server.name}`);
        }),
      this.app.servers.some((server) => server.enabled) ? null : h("span", { className: "empty" }, "No enabled servers."),
    );
  }

  private async start(): Promise<void> {
    const servers = [...this.serverChoices.querySelectorAll<HTMLInputElement>("input:checked")].map((box) => box.value);
    const name = this.threadName.value.trim();
    const started = await this.banner.attempt("start a thread", () =>
      this.app.client.request("thread/start", { servers, ...(name === "" ? {} : { name }) }),
    );
    if (started === undefined) return;
    this.archiveCurrent();
    this.thread = started.thread;
    this.app.addThread(started.thread);
    this.closeView();
    this.taskList.reset(started.thread.id);
    replace(this.resolved);
    replace(this.output);
    replace(this.threadInfo, h("p", { className: "meta" }, `Thread ${started.thread.id}: connecting its servers…`));
    await this.loadThread();
  }

  /** The thread the page leaves (another started, or the page closed) is archived, so its servers stop now rather
   * than at their idle timeout. */
  archiveCurrent(): void {
    const thread = this.thread;
    this.thread = undefined;
    if (thread === undefined) return;
    this.app.client.request("thread/archive", { threadId: thread.id }).catch(() => undefined);
  }

  /** The thread's servers (these reads wait for its servers to start) and the tools it may call. */
  private async loadThread(): Promise<void> {
    const thread = this.thread;
    if (thread === undefined) return;
    try {
      const statuses = await this.app.client.request("mcpServerStatus/list", { threadId: thread.id });
      const tools = await this.app.client.request("mcpTool/listForContext", { threadId: thread.id, includeDeferred: true });
      this.tools = tools.data;
      replace(
        this.threadInfo,
        h(
          "p",
          { className: "meta", "data-thread": thread.id },
          `Thread ${thread.id}${thread.name ? ` (${thread.name})` : ""}: `,
          statuses.data.length === 0
            ? "no servers"
            : statuses.data.map((row) =>
                h(
                  "span",
                  { className: `badge status-${row.runtimeStatus}`, "data-server": row.name },
                  `${row.name}: ${RUNTIME_STATUS_LABEL[row.runtimeStatus]}${row.lastError ? ` (${row.lastError.message})` : ""}`,
                ),
              ),
        ),
      );
      replace(this.tool, this.tools.map((tool) => h("option", { value: tool.name }, tool.name)));
      this.callButton.disabled = this.tools.length === 0;
      this.backgroundButton.disabled = this.tools.length === 0;
      this.prefillArguments();
    } catch (error) {
      replace(this.threadInfo, failureView(explain(error, "list the thread's tools")));
    }
  }

  /** The arguments start from the schema's defaults; the hint names what has none and must be filled in. */
  private prefillArguments(): void {
    const tool = this.tools.find((candidate) => candidate.name === this.tool.value);
    const { values, toFill } = defaultArguments(tool?.inputSchema ?? {});
    this.args.value = JSON.stringify(values, null, 2);
    const filled = Object.keys(values).length > 0 ? "Filled in from the tool's schema defaults." : "";
    const add =
      toFill.length === 0
        ? ""
        : `Add ${toFill.map((entry) => `"${entry.name}"${entry.type === undefined ? "" : ` (${entry.type})`}`).join(", ")}: required, with no default.`;
    if (tool === undefined) {
      this.argsHint.textContent = this.thread === undefined ? "Start a thread first." : "This thread has no tools to call.";
      return;
    }
    this.argsHint.textContent = [filled, add].filter((part) => part !== "").join(" ") || "Nothing is required.";
  }

  /** The open view goes when another call or thread replaces it. */
  private closeView(): void {
    const view = this.view;
    this.view = undefined;
    if (view === undefined) return;
    void view.close().then(() => view.element.remove());
  }

  /** The chosen tool and its arguments, or undefined after saying what is wrong with them. */
  private chosenCall(): { thread: Thread; tool: ToolView; args: { [key: string]: unknown } } | undefined {
    const thread = this.thread;
    const tool = this.tools.find((candidate) => candidate.name === this.tool.value);
    if (thread === undefined || tool === undefined) return undefined;
    let args: unknown;
    try {
      args = JSON.parse(this.args.value || "{}");
    } catch (error) {
      replace(this.output, h("p", { className: "error" }, `The arguments are not JSON: ${(error as Error).message}`));
      return undefined;
    }
    if (typeof args !== "object" || args === null || Array.isArray(args)) {
      replace(this.output, h("p", { className: "error" }, "The arguments must be a JSON object."));
      return undefined;
    }
    return { thread, tool, args: args as { [key: string]: unknown } };
  }

  /** The call answers at once with its task, listed below; its result is read from there when it ends. */
  private async callInBackground(): Promise<void> {
    const chosen = this.chosenCall();
    if (chosen === undefined) return;
    const { thread, tool, args } = chosen;
    const timeoutMs = this.timeout.value === "" ? undefined : Number(this.timeout.value);
    const task = await this.banner.attempt(`start ${tool.name} in the background`, () =>
      this.app.client.startBackgroundCall({
        threadId: thread.id,
        server: tool.server,
        tool: tool.tool,
        arguments: args,
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
      }),
    );
    if (task !== undefined) this.taskList.update(thread.id, task);
  }

  private async call(): Promise<void> {
    const chosen = this.chosenCall();
    if (chosen === undefined) return;
    const { thread, tool, args } = chosen;
    const timeoutMs = this.timeout.value === "" ? undefined : Number(this.timeout.value);
    const controller = new AbortController();
    this.inFlight = controller;
    this.callButton.disabled = true;
    this.cancelButton.disabled = false;
    this.progressBox.hidden = true;
    this.progressText.textContent = "";
    replace(this.output, h("p", { className: "meta", "data-role": "calling" }, `Calling ${tool.name}…`));
    const call = this.app.client.request(
      "mcpServer/tool/call",
      {
        threadId: thread.id,
        server: tool.server,
        tool: tool.tool,
        arguments: args as { [key: string]: unknown },
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
      },
      { signal: controller.signal },
    );
    this.closeView();
    if (hasAppView(tool)) {
      const opening = { client: this.app.client, threadId: thread.id, tool, arguments: args as { [key: string]: unknown } };
      this.view = new AppViewFrame({ ...opening, result: call });
      this.viewBox.append(this.view.element);
      void this.view.open();
    }
    try {
      const result = await call;
      replace(this.output, renderResult(tool.name, result));
    } catch (error) {
      // The user's own Cancel is not a failure: it says so, plainly.
      const failure = controller.signal.aborted
        ? h("p", { className: "meta", "data-role": "call-cancelled" }, `You cancelled the call to ${tool.name}.`)
        : h("div", { "data-role": "call-error" }, failureView(explain(error, `call ${tool.name}`)));
      replace(this.output, failure);
    } finally {
      this.inFlight = undefined;
      this.callButton.disabled = false;
      this.cancelButton.disabled = true;
      this.progressBox.hidden = true;
    }
  }
}

function renderResult(name: string, result: ToolCallResult): HTMLElement {
  return h(
    "div",
    { "data-role": "tool-result", "data-is-error": result.isError === true ? "true" : "false" },
    h("h3", null, `Result of ${name}`, result.isError ? h("span", { className: "badge warn" }, "isError") : null),
    result.content.map((block) => contentBlock(block)),
    result.structuredContent === undefined ? null : [h("h4", null, "Structured content"), boundedJson(result.structuredContent)],
    projection(result.projection),
  );
}
