// An MCP Apps view in the Thread tab (SPEC §13), as ext-apps' basic-host renders one: the sandbox frame on the
// host's second loopback origin with a policy built from the view's declared `csp`, an `AppBridge` over postMessage
// whose handlers are the client's `AppView` (so the view's calls go to the daemon with `origin: "app"`), the opening
// call's input when the view is ready and its result when the call ends, the view's size followed, and a teardown
// when it closes.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
import { AppView } from "mcp-app-server-client";
import type { AppServerClient, ToolCallResult, ToolView } from "mcp-app-server-client";
import { h, replace } from "./dom.js";
import { explain, failureView } from "./failure.js";
import { VIEW_SANDBOX, allowAttribute } from "./frame-policy.js";
import { openExternal } from "./host.js";

const HOST_INFO = { name: "mcp-app-server-settings", version: "0.1.0" };
const PROXY_READY = "ui/notifications/sandbox-proxy-ready";
const READY_TIMEOUT_MS = 10_000;
const TEARDOWN_TIMEOUT_MS = 2_000;

/** The sandbox's origin, which the host writes into the page (`<meta name="mcp-app-sandbox">`). */
export function sandboxOrigin(): string | undefined {
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
  private readonly frame = h("iframe", { className: "app-view", title: "MCP App view" }) as HTMLIFrameElement;
  private readonly status = h("p", { className: "meta", "data-role": "app-view-status" }, "Loading the view…");
  private readonly activity = h("ul", { className: "plain", "data-role": "app-view-activity" });
  private bridge: AppBridge | undefined;
  private closing: Promise<void> | undefined;

  constructor(private readonly opening: Opening) {
    const close = h("button", { type: "button", "data-role": "app-view-close" }, "Close view");
    close.addEventListener("click", () => void this.close());
    this.element = h(
      "section",
      { className: "panel app-view-panel", "data-role": "app-view", "data-server": opening.tool.server },
      h("h3", null, `View of ${opening.tool.name}`, close),
      this.status,
      this.frame,
      this.activity,
    );
  }

  /** Read the view, load the sandbox and connect the bridge; a failure is shown in place of the view. */
  async open(): Promise<void> {
    const { client, threadId, tool } = this.opening;
    const origin = sandboxOrigin();
    try {
      if (origin === undefined) throw new Error("this page was not served with an MCP Apps sandbox");
      const view = await AppView.open(client, { threadId, tool });
      this.element.dataset["prefersBorder"] = String(view.ui.prefersBorder ?? false);
      await this.loadSandbox(origin, view);
      if (this.closing !== undefined) return;
      const bridge = this.connectBridge(view);
      await bridge.connect(new PostMessageTransport(this.frame.contentWindow!, this.frame.contentWindow!));
      await bridge.sendSandboxResourceReady({
        html: view.html,
        ...(view.ui.csp === undefined ? {} : { csp: view.ui.csp }),
        ...(view.ui.permissions === undefined ? {} : { permissions: view.ui.permissions }),
      });
    } catch (error) {
      this.frame.remove();
      replace(this.status, failureView(explain(error, `render the view of ${tool.name}`)));
    }
  }

  /** Tear the view down (it may answer first, within a bound) and remove its frame; safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const bridge = this.bridge;
      if (bridge !== undefined) {
        try {
          await bridge.teardownResource({}, { timeout: TEARDOWN_TIMEOUT_MS });
        } catch {
          // A view that does not answer is closed all the same.
        }
        await bridge.close();
      }
      this.frame.remove();
      replace(this.status, "View closed.");
      this.element.dataset["closed"] = "true";
    })();
    return this.closing;
  }

  /** The sandbox document on its own origin, with the view's policy; resolves when its relay is ready. */
  private loadSandbox(origin: string, view: AppView): Promise<void> {
    const url = new URL("/sandbox.html", origin);
    url.searchParams.set("host", location.origin);
    url.searchParams.set("csp", JSON.stringify(view.ui.csp ?? {}));
    this.frame.setAttribute("sandbox", VIEW_SANDBOX);
    const allow = allowAttribute(view.ui.permissions as { [feature: string]: unknown } | undefined);
    if (allow !== "") this.frame.setAttribute("allow", allow);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        window.removeEventListener("message", listener);
        reject(new Error(`the sandbox did not load within ${READY_TIMEOUT_MS / 1000} s`));
      }, READY_TIMEOUT_MS);
      const listener = (event: MessageEvent): void => {
        const data = event.data as { method?: unknown } | null;
        if (event.source !== this.frame.contentWindow || event.origin !== origin || data?.method !== PROXY_READY) return;
        clearTimeout(timer);
        window.removeEventListener("message", listener);
        resolve();
      };
      window.addEventListener("message", listener);
      this.frame.src = url.href;
    });
  }

  private connectBridge(view: AppView): AppBridge {
    const bridge = new AppBridge(
      null,
      HOST_INFO,
      { serverTools: {}, serverResources: {}, openLinks: {}, logging: {} },
      { hostContext: { theme: "light", displayMode: "inline", platform: "web" } },
    );
    const signal = (extra: { mcpReq: { signal: AbortSignal } }): { signal: AbortSignal } => ({
      signal: extra.mcpReq.signal,
    });
    bridge.oncalltool = async (params, extra) => {
      this.note(`the view called ${params.name}`);
      return view.callTool(params, signal(extra));
    };
    bridge.onreadresource = async (params, extra) => view.readResource(params, signal(extra));
    bridge.onlistresources = async (params, extra) => view.listResources(params, signal(extra));
    bridge.onlistresourcetemplates = async (params, extra) =>
      view.listResourceTemplates(params, signal(extra));
    bridge.onlistprompts = async (params, extra) => view.listPrompts(params, signal(extra));
    bridge.onopenlink = async ({ url }) => {
      try {
        await openExternal(url);
        return {};
      } catch {
        return { isError: true };
      }
    };
    bridge.onmessage = async () => {
      this.note("the view sent a message for the conversation; this page has none to add it to");
      return { isError: true };
    };
    bridge.onsizechange = ({ height }) => {
      if (height !== undefined) this.frame.style.height = `${Math.min(Math.max(height, 40), 2000)}px`;
    };
    bridge.onrequestteardown = () => void this.close();
    bridge.oninitialized = () => {
      this.status.textContent = `${view.resourceUri} from ${view.server}`;
      this.element.dataset["ready"] = "true";
      void bridge.sendToolInput({ arguments: this.opening.arguments });
      this.opening.result.then(
        (result) => void bridge.sendToolResult(AppView.toolResult(result)),
        (error: unknown) => void bridge.sendToolCancelled({ reason: error instanceof Error ? error.message : String(error) }),
      );
    };
    this.bridge = bridge;
    return bridge;
  }

  private note(text: string): void {
    this.activity.prepend(h("li", null, `${new Date().toLocaleTimeString()}: ${text}`));
  }
}
