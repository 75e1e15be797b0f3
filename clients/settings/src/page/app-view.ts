// An MCP Apps view in the Thread tab (SPEC §13), mounted with the client's kit (`mcp-app-server-client/apps-view`):
// the panel around it (a title, a close button, what the view did), the host's sandbox URL the page was served
// with, and links opened in the system browser through the host once the person clicks for them.
import { mountAppView } from "mcp-app-server-client/apps-view";
import type { ModelContextUpdate, MountedAppView } from "mcp-app-server-client/apps-view";
import type { AppServerClient, ToolCallResult, ToolView } from "mcp-app-server-client";
import { h, replace } from "./dom.js";
import { explain, failureView } from "./failure.js";
import { openExternal } from "./host.js";

/** The DOM shows the start of a view's model context, never all of it (a view may send a whole document). */
const CONTEXT_SHOWN_CHARS = 2000;
const HOST_INFO = { name: "mcp-app-server-settings", version: "0.1.0" };

/** The sandbox's URL, which the host writes into the page (`<meta name="mcp-app-sandbox">`). */
export function sandboxUrl(): string | undefined {
  const content = document.querySelector<HTMLMetaElement>('meta[name="mcp-app-sandbox"]')?.content ?? "";
  return content.startsWith("http://") ? content : undefined;
}

/** What opened the view: its thread, its tool, the arguments, and the call's outcome to come. */
export interface Opening {
  readonly client: AppServerClient;
  readonly threadId: string;
  readonly tool: ToolView;
  readonly arguments: { [key: string]: unknown };
  readonly result: Promise<ToolCallResult>;
}

/** One rendered view; `close()` tears it down (also when the view asks to). */
export class AppViewFrame {
  readonly element: HTMLElement;
  private readonly status = h("p", { className: "meta", "data-role": "app-view-status" }, "Loading the view…");
  private readonly slot = h("div", { "data-role": "app-view-slot" });
  private readonly modelContext = h("pre", { "data-role": "app-view-context", hidden: true });
  private readonly activity = h("ul", { className: "plain", "data-role": "app-view-activity" });
  private mounted: MountedAppView | undefined;
  private closing: Promise<void> | undefined;

  constructor(private readonly opening: Opening) {
    const close = h("button", { type: "button", "data-role": "app-view-close" }, "Close view");
    close.addEventListener("click", () => void this.close());
    this.element = h(
      "section",
      { className: "panel app-view-panel", "data-role": "app-view", "data-server": opening.tool.server },
      h("h3", null, `View of ${opening.tool.name}`, close),
      this.status,
      this.slot,
      this.modelContext,
      this.activity,
    );
  }

  /** Mount the view through the host's sandbox; a failure is shown in place of the view. */
  async open(): Promise<void> {
    const { client, threadId, tool } = this.opening;
    const sandbox = sandboxUrl();
    try {
      if (sandbox === undefined) throw new Error("this page was not served with an MCP Apps sandbox");
      const mounted = await mountAppView(this.slot, {
        client,
        sandbox,
        threadId,
        tool,
        arguments: this.opening.arguments,
        result: this.opening.result,
        hostInfo: HOST_INFO,
        openLink: openExternal,
        onActivity: (text) => this.note(text),
        onModelContext: (update) => this.showModelContext(update),
        onClose: () => void this.close(),
      });
      this.mounted = mounted;
      if (this.closing !== undefined) return void (await mounted.close());
      this.element.dataset["prefersBorder"] = String(mounted.view.ui.prefersBorder ?? false);
      await mounted.ready;
      this.status.textContent = `${mounted.view.resourceUri} from ${mounted.view.server}`;
      this.element.dataset["ready"] = "true";
    } catch (error) {
      replace(this.status, failureView(explain(error, `render the view of ${tool.name}`)));
    }
  }

  /** Tear the view down and say so; safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.mounted?.close();
      replace(this.status, "View closed.");
      this.element.dataset["closed"] = "true";
    })();
    return this.closing;
  }

  /** This host has no model: what the view would add to the model's next turn is shown instead (the latest). */
  private showModelContext(update: ModelContextUpdate): void {
    const texts = (update.content ?? []).flatMap((block) => (block.type === "text" ? [block.text] : [`[${block.type}]`]));
    this.modelContext.textContent = `For the model: ${texts.join("\n").slice(0, CONTEXT_SHOWN_CHARS)}`;
    this.modelContext.hidden = false;
  }

  private note(text: string): void {
    this.activity.prepend(h("li", null, `${new Date().toLocaleTimeString()}: ${text}`));
  }
}
