// MCP Apps (SPEC §13): what a host needs to run a server's view with ext-apps' `AppBridge` against the daemon. The
// view's HTML and its `_meta.ui` are read whole from the daemon; the view's own tool calls, resource reads and lists
// go through typed requests in its thread with `origin: "app"`, so the daemon (not the page) decides which tools a
// view may reach. Nothing here imports ext-apps: a host assigns these methods to the bridge's handlers.
import type { AppServerClient, RequestOptions } from "./client.js";
import type {
  BlobResourceContents,
  ContentBlock,
  PromptView,
  ResourceContent,
  ResourceTemplateView,
  ResourceView,
  TextResourceContents,
  ToolCallResult,
  ToolView,
  UiResourceMeta,
} from "./generated/protocol.js";

/** The MIME type of an MCP Apps view (`text/html;profile=mcp-app`). */
export const APP_VIEW_MIME_TYPE = "text/html;profile=mcp-app";

// The view's results are MCP's shapes (type aliases, so they fit MCP's open result types where a host passes them).

/** A tool result as MCP's `CallToolResult` carries it to a view (the daemon's `projection` is for models). */
export type AppToolResult = {
  content: ContentBlock[];
  structuredContent?: unknown;
  isError?: boolean;
  _meta?: { [key: string]: unknown };
};

/** A resource read as MCP's `ReadResourceResult` carries it: each content text or blob. */
export type AppReadResourceResult = { contents: (TextResourceContents | BlobResourceContents)[] };

/** Where a view runs: the thread whose call opened it and the tool (with a `ui.resourceUri`) it belongs to. */
export interface AppViewTarget {
  readonly threadId: string;
  readonly tool: ToolView;
}

/** The params of the view's requests, as MCP (and `AppBridge`) hands them over. */
export interface AppCallToolParams {
  name: string;
  arguments?: { [key: string]: unknown } | undefined;
  _meta?: { [key: string]: unknown } | undefined;
}
export interface AppReadResourceParams {
  uri: string;
}
export interface AppCursorParams {
  cursor?: string | undefined;
}

/** Why a tool has no view the host can render (a typed failure, not a blank frame). */
export class AppViewUnavailable extends Error {
  override readonly name = "AppViewUnavailable";
  constructor(
    message: string,
    /** `noView` (the tool names none), `notHtml` (the resource is not an MCP Apps view), `empty`. */
    readonly kind: "noView" | "notHtml" | "empty",
  ) {
    super(message);
  }
}

/** True when a tool has a view to render (`ui.resourceUri`). */
export function hasAppView(tool: ToolView): tool is ToolView & { ui: { resourceUri: string } } {
  return typeof tool.ui?.resourceUri === "string";
}

/** A view of one server in one thread: its HTML and hints, and the requests it may make, each scoped to both. */
export class AppView {
  /** The server's `_meta.ui` on the view: `csp`, `permissions`, `domain`, `prefersBorder`. */
  readonly ui: UiResourceMeta;

  private constructor(
    private readonly client: AppServerClient,
    readonly threadId: string,
    readonly server: string,
    readonly resourceUri: string,
    readonly html: string,
    ui: UiResourceMeta | undefined,
  ) {
    this.ui = ui ?? {};
  }

  /** Read the tool's view through its thread (whole, never a preview); fails with `AppViewUnavailable` when the
   * tool has none or the resource is not an MCP Apps view, and with the daemon's typed error when the read does. */
  static async open(client: AppServerClient, target: AppViewTarget, options?: RequestOptions): Promise<AppView> {
    const { tool, threadId } = target;
    if (!hasAppView(tool)) throw new AppViewUnavailable(`${tool.name} has no view`, "noView");
    const uri = tool.ui.resourceUri;
    const read = await client.request("mcpServer/resource/read", { threadId, server: tool.server, uri }, options);
    const content = read.contents.find((entry) => entry.mimeType === APP_VIEW_MIME_TYPE) ?? read.contents[0];
    if (content === undefined) throw new AppViewUnavailable(`${uri} has no contents`, "empty");
    if (content.mimeType !== APP_VIEW_MIME_TYPE) {
      throw new AppViewUnavailable(`${uri} is ${content.mimeType ?? "untyped"}, not ${APP_VIEW_MIME_TYPE}`, "notHtml");
    }
    return new AppView(client, threadId, tool.server, uri, htmlOf(content), content._meta?.ui);
  }

  /** What `AppBridge.sendToolResult` takes: the result of the call that opened the view, as MCP sends it (its
   * input goes to `sendToolInput` as `{arguments}`). */
  static toolResult(result: ToolCallResult): AppToolResult {
    return mcpResult(result);
  }

  /** The view calls a tool of its own server (`origin: "app"`): the daemon refuses a model-only one with
   * `toolNotAllowed` (`data.visibility`). */
  async callTool(params: AppCallToolParams, options?: RequestOptions): Promise<AppToolResult> {
    const result = await this.client.request(
      "mcpServer/tool/call",
      {
        threadId: this.threadId,
        server: this.server,
        tool: params.name,
        origin: "app",
        ...(params.arguments === undefined ? {} : { arguments: params.arguments }),
        ...(params._meta === undefined ? {} : { _meta: params._meta }),
      },
      options,
    );
    return mcpResult(result);
  }

  /** The view reads a resource of its server, whole. */
  async readResource(params: AppReadResourceParams, options?: RequestOptions): Promise<AppReadResourceResult> {
    const read = await this.client.request(
      "mcpServer/resource/read",
      { threadId: this.threadId, server: this.server, uri: params.uri },
      options,
    );
    return { contents: read.contents.map(mcpContent) };
  }

  /** The view lists its server's resources (one page). */
  async listResources(
    params?: AppCursorParams,
    options?: RequestOptions,
  ): Promise<{ resources: Omit<ResourceView, "server">[]; nextCursor?: string }> {
    const page = await this.client.request("mcpResource/list", this.scope(params), options);
    return withCursor({ resources: page.resources.map(withoutServer) }, page.nextCursor);
  }

  /** The view lists its server's resource templates (one page). */
  async listResourceTemplates(
    params?: AppCursorParams,
    options?: RequestOptions,
  ): Promise<{ resourceTemplates: Omit<ResourceTemplateView, "server">[]; nextCursor?: string }> {
    const page = await this.client.request("mcpResource/list", this.scope(params), options);
    return withCursor({ resourceTemplates: page.resourceTemplates.map(withoutServer) }, page.nextCursor);
  }

  /** The view lists its server's prompts (one page). */
  async listPrompts(
    params?: AppCursorParams,
    options?: RequestOptions,
  ): Promise<{ prompts: Omit<PromptView, "server">[]; nextCursor?: string }> {
    const page = await this.client.request("mcpPrompt/list", this.scope(params), options);
    return withCursor({ prompts: page.data.map(withoutServer) }, page.nextCursor);
  }

  private scope(params: AppCursorParams | undefined): { threadId: string; server: string; cursor?: string } {
    const cursor = params?.cursor;
    return { threadId: this.threadId, server: this.server, ...(cursor === undefined ? {} : { cursor }) };
  }
}

function htmlOf(content: ResourceContent): string {
  if (content.text !== undefined) return content.text;
  if (content.blob === undefined) throw new AppViewUnavailable(`${content.uri} has neither text nor a blob`, "empty");
  const bytes = Uint8Array.from(atob(content.blob), (char) => char.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}

/** A whole read's content (never a preview: each has its text or its blob) in MCP's shape. */
function mcpContent(content: ResourceContent): TextResourceContents | BlobResourceContents {
  const common = {
    uri: content.uri,
    ...(content.mimeType === undefined ? {} : { mimeType: content.mimeType }),
    ...(content._meta === undefined ? {} : { _meta: content._meta as { [key: string]: unknown } }),
  };
  if (content.text !== undefined) return { ...common, text: content.text };
  if (content.blob !== undefined) return { ...common, blob: content.blob };
  throw new AppViewUnavailable(`${content.uri} has neither text nor a blob`, "empty");
}

function mcpResult(result: ToolCallResult): AppToolResult {
  const { projection: _projection, ...mcp } = result;
  return mcp;
}

function withoutServer<T extends { server: string }>(entry: T): Omit<T, "server"> {
  const { server: _server, ...rest } = entry;
  return rest;
}

function withCursor<T extends object>(page: T, cursor: string | undefined): T & { nextCursor?: string } {
  return cursor === undefined ? page : { ...page, nextCursor: cursor };
}
