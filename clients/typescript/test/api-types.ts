// Compile-time checks of the public API: each `@ts-expect-error` line must fail to type-check (this file is built with
// the tests and never run).
import { AppServerClient, AppServerError } from "mcp-app-server-client";
import type { EventPayload, PageItem, PaginatedMethod, ServerRecord, ToolView } from "mcp-app-server-client";

export async function typed(client: AppServerClient): Promise<void> {
  const listed = await client.request("mcpServer/list");
  const names: string[] = listed.data.map((server) => server.name);
  await client.request("mcpServer/create", { name: "fx", config: { command: "node" } });
  // @ts-expect-error params are required where a param is
  await client.request("mcpServer/create");
  // @ts-expect-error a wrong param type
  await client.request("mcpServer/delete", { name: 1 });
  // @ts-expect-error retired methods are not methods
  await client.request("mcpTool/call", {});
  // @ts-expect-error initialize goes through initialize()
  await client.request("initialize", { clientInfo: { name: "a", version: "1" } });
  await client.request("mcpServer/list", undefined, { timeoutMs: 1000, signal: new AbortController().signal });
  void names;
}

export function events(client: AppServerClient): void {
  client.on("mcpServer/tool/progress", (progress) => progress.progress.toFixed());
  client.on("exit", (exit) => exit.stderrTail.length + Number(exit.restarting));
  // @ts-expect-error a notification's params are its own
  client.on("mcp:tools_updated", (update) => update.progress);
  // @ts-expect-error retired events are not events
  client.on("mcp:server_started", () => undefined);
  client.onElicitation((request) =>
    request.mode === "form"
      ? request.requestedSchema.required?.length
        ? { action: "decline" }
        : { action: "cancel" }
      : { action: new URL(request.url).origin === "https://login.example" ? "accept" : "decline" },
  );
  // @ts-expect-error a URL elicitation has no form: narrow on mode first
  client.onElicitation((request) => (request.requestedSchema ? { action: "cancel" } : { action: "cancel" }));
  // @ts-expect-error an elicitation is answered with an action
  client.onElicitation(() => ({ content: {} }));
}

export const pages: PaginatedMethod[] = [
  "mcpServer/list",
  "mcpServerStatus/list",
  "mcpTool/list",
  "mcpPrompt/list",
  "thread/list",
];
// @ts-expect-error listForContext has no cursor: it is not paginated
export const notPaged: PaginatedMethod = "mcpTool/listForContext";
export const item: PageItem<"mcpServer/list"> extends ServerRecord ? true : false = true;
export const tool: PageItem<"mcpTool/list"> extends ToolView ? true : false = true;
export const payload: EventPayload<"restarted">["serverInfo"]["name"] = "mcp-app-server";

export function narrowing(error: unknown): string | undefined {
  if (!(error instanceof AppServerError)) return undefined;
  // @ts-expect-error details are read once the reason is known
  const origin: string = error.data.origin;
  if (error.is("originNotAllowed")) return error.data.origin + origin;
  if (error.is("startupFailed")) return error.data.stderrTail;
  return error.data.reason === "unknownServer" ? error.data.server : undefined;
}

export async function plumbing(client: AppServerClient): Promise<number> {
  const progress = await client.waitFor("mcpServer/tool/progress", (update) => update.total !== undefined, {
    timeoutMs: 1000,
    signal: new AbortController().signal,
  });
  const exit = await client.waitFor("exit");
  // @ts-expect-error the predicate gets the notification's own params
  await client.waitFor("mcp:tools_updated", (update) => update.progress > 0);
  // @ts-expect-error retired events cannot be waited for
  await client.waitFor("mcp:server_started");
  const spawned = await AppServerClient.spawn("mcp-app-server", [], {
    stderr: "/var/log/mcp-app-server.log",
    requestTimeoutMs: 60_000,
    maxLineBytes: 8 * 1024 * 1024,
    restart: true,
  });
  await AppServerClient.spawn("mcp-app-server", [], { stderr: process.stderr });
  // @ts-expect-error stderr is a path or a stream
  await AppServerClient.spawn("mcp-app-server", [], { stderr: 2 });
  await spawned.close();
  return progress.progress + Number(exit.expected);
}
