// A renderer's side of MCP Apps, public API only, bundled for the browser with esbuild and no plugin: the client over
// the host's IPC (a MessagePort whose other end the host relays to the sidecar's stdio), and a server's view shown
// for a tool call in about ten lines. The host's Node side serves the sandbox (`AppsSandbox` of
// `mcp-app-server-client/apps-host`) and hands its `url` to the renderer.
import { AppServerClient, messagePortTransport } from "mcp-app-server-client";
import type { MessagePortLike } from "mcp-app-server-client";
import { mountAppView } from "mcp-app-server-client/apps-view";
import type { MountedAppView } from "mcp-app-server-client/apps-view";

/** The client of a renderer: the host relays each message to the sidecar and each of its lines back. */
export async function connect(port: MessagePortLike): Promise<AppServerClient> {
  const client = new AppServerClient(messagePortTransport(port));
  await client.initialize({ name: "renderer-example", version: "0.1.0" }, { mcpApps: {} });
  return client;
}

/** Call `server`'s `toolName` in a new thread and show its view in `container`. */
export async function showView(
  client: AppServerClient,
  sandbox: string,
  container: HTMLElement,
  server: string,
  toolName: string,
  args: { [key: string]: unknown } = {},
): Promise<MountedAppView> {
  const { thread } = await client.request("thread/start", { servers: [server] });
  const { data } = await client.request("mcpTool/listForContext", { threadId: thread.id });
  const tool = data.find((entry) => entry.server === server && entry.tool === toolName);
  if (tool === undefined) throw new Error(`${server} offers no ${toolName}`);
  const result = client.request("mcpServer/tool/call", { threadId: thread.id, server, tool: toolName, arguments: args });
  return mountAppView(container, { client, sandbox, threadId: thread.id, tool, arguments: args, result });
}
