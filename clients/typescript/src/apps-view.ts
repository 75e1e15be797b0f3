// mcp-app-server-client/apps-view (browser): mount a server's MCP Apps view into a container for a thread's tool
// call (SPEC §13), as ext-apps' basic-host does, over the client's `AppView`: the relay frame of the host's sandbox
// (`apps-host`), the view on its own origin inside it, an `AppBridge` whose handlers are the `AppView` (so the view's
// calls go to the daemon with `origin: "app"`), the call's input when the view is ready and its result when the call
// ends, the view's size followed, links opened only after the person clicks, and a teardown.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
import type { McpUiHostContext, McpUiUpdateModelContextRequest } from "@modelcontextprotocol/ext-apps/app-bridge";
import { AppView } from "./apps.js";
import type { AppServerClient } from "./client.js";
import { DAEMON_VERSION, MCP_APPS } from "./generated/protocol.js";
import type { ToolCallResult, ToolView } from "./generated/protocol.js";
import { VIEW_SANDBOX, allowAttribute, viewLabel } from "./apps/frame.js";

export { VIEW_SANDBOX, allowAttribute, viewLabel } from "./apps/frame.js";

const READY_TIMEOUT_MS = 10_000;
const TEARDOWN_TIMEOUT_MS = 2_000;
const MIN_HEIGHT = 40;
const MAX_HEIGHT = 4000;

/** A link a view asks to open, for the person to allow or not. */
export interface LinkRequest {
  readonly url: string;
  readonly server: string;
}

/** What a view tells the model (`ui/update-model-context`): the latest one replaces the one before. */
export type ModelContextUpdate = McpUiUpdateModelContextRequest["params"];

/** What to mount: the view of `tool` for the call in `threadId`, and where the host's sandbox is. */
export interface MountAppViewOptions {
  readonly client: AppServerClient;
  /** The host's sandbox (`AppsSandbox.url` of `mcp-app-server-client/apps-host`). */
  readonly sandbox: string;
  readonly threadId: string;
  /** The tool (with `ui.resourceUri`) whose call opened the view. */
  readonly tool: ToolView;
  /** The call's arguments, handed to the view when it is ready. */
  readonly arguments?: { readonly [key: string]: unknown } | undefined;
  /** The call's outcome (the promise of `mcpServer/tool/call`, or its result), handed over when it ends. */
  readonly result?: Promise<ToolCallResult> | ToolCallResult | undefined;
  readonly hostInfo?: { readonly name: string; readonly version: string } | undefined;
  readonly hostContext?: McpUiHostContext | undefined;
  /** Open a link the person allowed (default: a new browsing context without an opener). */
  readonly openLink?: ((url: string) => void | Promise<void>) | undefined;
  /** A line for each thing the view did (its calls, its links), for a host that shows them. */
  readonly onActivity?: ((text: string) => void) | undefined;
  /** Keep what the view tells the model (for the model's next turn). Given, the bridge declares
   * `updateModelContext` and accepts the updates; absent, they are refused as a method the host lacks. */
  readonly onModelContext?: ((update: ModelContextUpdate) => void) | undefined;
  /** Called once the view is gone (closed by the host, or at its own request). */
  readonly onClose?: (() => void) | undefined;
}

/** A mounted view. */
export interface MountedAppView {
  readonly view: AppView;
  readonly frame: HTMLIFrameElement;
  /** Resolves when the view has initialized its bridge. */
  readonly ready: Promise<void>;
  /** Tear the view down (it may answer first, within a bound) and remove what was mounted; safe to call twice. */
  close(): Promise<void>;
}

/** Read the view, load it into `container` through the sandbox and connect its bridge; on failure nothing stays
 * mounted and the error (`AppViewUnavailable`, the daemon's typed error, a sandbox that did not load) is thrown. */
export async function mountAppView(container: HTMLElement, options: MountAppViewOptions): Promise<MountedAppView> {
  const view = await AppView.open(options.client, { threadId: options.threadId, tool: options.tool });
  const frame = document.createElement("iframe");
  frame.className = "mcp-app-view";
  frame.title = `View of ${options.tool.name} (${view.server})`;
  frame.setAttribute("sandbox", VIEW_SANDBOX);
  const allow = allowAttribute(view.ui.permissions);
  if (allow !== "") frame.setAttribute("allow", allow);
  frame.style.cssText = "display:block;width:100%;border:0";
  const links = document.createElement("div");
  links.className = "mcp-app-links";
  container.append(frame, links);
  const mounted = new Mounted(view, frame, links, options);
  try {
    await mounted.load();
  } catch (error) {
    await mounted.close();
    throw error;
  }
  return mounted;
}

class Mounted implements MountedAppView {
  readonly ready: Promise<void>;
  private readonly bridge: AppBridge;
  private markReady: () => void = () => {};
  private closing: Promise<void> | undefined;
  private linkAsked = false;

  constructor(
    readonly view: AppView,
    readonly frame: HTMLIFrameElement,
    private readonly links: HTMLElement,
    private readonly options: MountAppViewOptions,
  ) {
    this.ready = new Promise((resolve) => {
      this.markReady = resolve;
    });
    this.bridge = this.makeBridge();
  }

  async load(): Promise<void> {
    const sandbox = new URL(this.options.sandbox);
    const url = new URL(sandbox.href);
    url.searchParams.set("page", location.origin);
    url.searchParams.set("view", await viewLabel(this.view.server, this.view.ui.domain));
    url.searchParams.set("csp", JSON.stringify(this.view.ui.csp ?? {}));
    await this.loadRelay(url, sandbox.origin);
    const target = this.frame.contentWindow;
    if (target === null || this.closing !== undefined) return;
    await this.bridge.connect(new PostMessageTransport(target, target));
    const { html, ui } = this.view;
    await this.bridge.sendSandboxResourceReady({
      html,
      ...(ui.csp === undefined ? {} : { csp: ui.csp }),
      ...(ui.permissions === undefined ? {} : { permissions: ui.permissions }),
    });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        await this.bridge.teardownResource({}, { timeout: TEARDOWN_TIMEOUT_MS });
      } catch {
        // A view that does not answer (or never connected) is closed all the same.
      }
      await this.bridge.close().catch(() => {});
      this.frame.remove();
      this.links.remove();
      this.options.onClose?.();
    })();
    return this.closing;
  }

  /** The relay document on the sandbox's origin; resolves when it says it is ready. */
  private loadRelay(url: URL, origin: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        window.removeEventListener("message", listener);
        reject(new Error(`the MCP Apps sandbox did not load within ${READY_TIMEOUT_MS / 1000} s`));
      }, READY_TIMEOUT_MS);
      const listener = (event: MessageEvent): void => {
        const data = event.data as { method?: unknown } | null;
        if (event.source !== this.frame.contentWindow || event.origin !== origin) return;
        if (data?.method !== MCP_APPS.sandboxProxyReady) return;
        clearTimeout(timer);
        window.removeEventListener("message", listener);
        resolve();
      };
      window.addEventListener("message", listener);
      this.frame.src = url.href;
    });
  }

  private makeBridge(): AppBridge {
    const { options, view } = this;
    const bridge = new AppBridge(
      null,
      options.hostInfo ?? { name: "mcp-app-server-client", version: DAEMON_VERSION },
      {
        serverTools: {},
        serverResources: {},
        openLinks: {},
        logging: {},
        ...(options.onModelContext === undefined ? {} : { updateModelContext: { text: {}, structuredContent: {} } }),
      },
      { hostContext: options.hostContext ?? { theme: "light", displayMode: "inline", platform: "web" } },
    );
    const signal = (extra: { mcpReq: { signal: AbortSignal } }): { signal: AbortSignal } => ({
      signal: extra.mcpReq.signal,
    });
    bridge.oncalltool = async (params, extra) => {
      options.onActivity?.(`the view called ${params.name}`);
      return view.callTool(params, signal(extra));
    };
    bridge.onreadresource = async (params, extra) => view.readResource(params, signal(extra));
    bridge.onlistresources = async (params, extra) => view.listResources(params, signal(extra));
    bridge.onlistresourcetemplates = async (params, extra) => view.listResourceTemplates(params, signal(extra));
    bridge.onlistprompts = async (params, extra) => view.listPrompts(params, signal(extra));
    bridge.onopenlink = async ({ url }) => ((await this.askToOpen(url)) ? {} : { isError: true });
    bridge.onmessage = async () => {
      options.onActivity?.("the view sent a message for the conversation; this host has none to add it to");
      return { isError: true };
    };
    const onModelContext = options.onModelContext;
    if (onModelContext !== undefined) {
      bridge.onupdatemodelcontext = async (update) => {
        onModelContext(update);
        return {};
      };
    }
    bridge.onsizechange = ({ height }) => {
      if (height !== undefined) this.frame.style.height = `${Math.min(Math.max(height, MIN_HEIGHT), MAX_HEIGHT)}px`;
    };
    bridge.onrequestteardown = () => void this.close();
    bridge.oninitialized = () => {
      this.markReady();
      void bridge.sendToolInput({ arguments: { ...(options.arguments ?? {}) } });
      if (options.result === undefined) return;
      Promise.resolve(options.result).then(
        (result) => void bridge.sendToolResult(AppView.toolResult(result)),
        (error: unknown) =>
          void bridge.sendToolCancelled({ reason: error instanceof Error ? error.message : String(error) }),
      );
    };
    return bridge;
  }

  /** A link opens only when the person clicks for it, one at a time, naming the URL and the server. */
  private askToOpen(url: string): Promise<boolean> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return Promise.resolve(false);
    }
    if ((parsed.protocol !== "https:" && parsed.protocol !== "http:") || this.linkAsked || this.closing !== undefined) {
      return Promise.resolve(false);
    }
    this.linkAsked = true;
    const server = this.view.server;
    this.options.onActivity?.(`the view asked to open ${parsed.href}`);
    return new Promise((resolve) => {
      const prompt = document.createElement("p");
      prompt.setAttribute("role", "alertdialog");
      prompt.dataset["role"] = "app-view-link";
      const text = document.createElement("span");
      text.textContent = `${server}'s view asks to open `;
      const shown = document.createElement("code");
      shown.textContent = parsed.href;
      const open = document.createElement("button");
      open.type = "button";
      open.textContent = "Open link";
      const dismiss = document.createElement("button");
      dismiss.type = "button";
      dismiss.textContent = "Dismiss";
      prompt.append(text, shown, " ", open, " ", dismiss);
      this.links.append(prompt);
      const settle = (opened: boolean): void => {
        prompt.remove();
        this.linkAsked = false;
        resolve(opened);
      };
      open.addEventListener("click", (event) => {
        if (!event.isTrusted) return;
        const opener = this.options.openLink ?? ((href: string) => void window.open(href, "_blank", "noopener,noreferrer"));
        Promise.resolve(opener(parsed.href)).then(
          () => settle(true),
          () => settle(false),
        );
      });
      dismiss.addEventListener("click", () => settle(false));
    });
  }
}
