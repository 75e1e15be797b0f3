// A host session written against the package's public API only: what a desktop app's settings page and agent loop
// do with mcp-app-server, step by step. It prints each step on stderr and a JSON summary on stdout.
//
//   node host.js <data-dir> <daemon command> [daemon args...] -- <MCP server command> [server args...]
//
// e.g. `node host.js /tmp/data mcp-app-server -- python3 fixture_server.py` (the server needs the fixture's tools).
import {
  AppServerClient,
  AppServerError,
  isAppServerError,
  parseToolFullName,
  toolFullName,
} from "mcp-app-server-client";
import type {
  ElicitationFormSchema,
  ElicitationResponse,
  ElicitationValue,
  McpServerConfig,
  PrimitiveSchemaDefinition,
  StartupStatusUpdated,
} from "mcp-app-server-client";

const log = (step: string, detail: unknown = ""): void => {
  process.stderr.write(`${step}${detail === "" ? "" : ` ${JSON.stringify(detail)}`}\n`);
};

/** What a form renderer would prefill: a user who answers every field (a real host shows a modal). */
function fill(schema: ElicitationFormSchema, answers: { [key: string]: ElicitationValue }): ElicitationResponse {
  const content: { [key: string]: ElicitationValue } = {};
  for (const [key, field] of Object.entries(schema.properties)) {
    const value = answers[key] ?? defaultFor(field);
    if (value !== undefined) content[key] = value;
  }
  return { action: "accept", content };
}

function defaultFor(field: PrimitiveSchemaDefinition): ElicitationValue | undefined {
  switch (field.type) {
    case "string":
      return "enum" in field ? field.enum[0] : "oneOf" in field ? field.oneOf[0]?.const : field.default;
    case "number":
    case "integer":
      return field.default ?? field.minimum ?? 0;
    case "boolean":
      return field.default ?? false;
    case "array":
      return field.default ?? [];
  }
}

async function main(argv: string[]): Promise<void> {
  const split = argv.indexOf("--");
  const [dataDir, daemon, ...daemonArgs] = argv.slice(0, split);
  const [serverCommand, ...serverArgs] = argv.slice(split + 1);
  if (split < 0 || dataDir === undefined || daemon === undefined || serverCommand === undefined) {
    throw new Error("usage: host.js <data-dir> <daemon command> [args...] -- <server command> [args...]");
  }
  const fixture: McpServerConfig = { command: serverCommand, args: serverArgs, env: { FIXTURE_MODE: "demo" } };

  // 1. Start the sidecar; it is initialized when this resolves.
  const client = await AppServerClient.spawn(daemon, daemonArgs, {
    dataDir,
    clientInfo: { name: "example-host", version: "1.0.0" },
  });
  log("initialized", client.initializeResult?.serverInfo);
  const startups: string[] = [];
  client.on("mcpServer/startupStatus/updated", (update: StartupStatusUpdated) => {
    startups.push(`${update.threadId === null ? "app" : "thread"}:${update.name}:${update.status}`);
  });
  client.on("error", (error) => log("client error", error.message));
  client.onElicitation((request) => {
    log("elicitation", { server: request.serverName, message: request.message });
    if (request.mode === "url") return { action: "decline" }; // a host shows the URL's origin and asks first
    return fill(request.requestedSchema, { name: "Ada", age: 36 });
  });

  // 2. Create servers; list them (secrets come back as "***"), and their live status.
  await client.request("mcpServer/create", { name: "fx", config: fixture });
  await client.request("mcpServer/create", { name: "spare", config: { ...fixture, enabled: false } });
  const servers = [];
  for await (const server of client.paginate("mcpServer/list", { limit: 1 })) servers.push(server);
  const listed = servers.find((server) => server.name === "fx");
  log(
    "servers",
    servers.map((server) => server.name),
  );
  const status = await client.request("mcpServerStatus/list", { serverName: "spare" });
  log(
    "status",
    status.data.map((row) => [row.name, row.runtimeStatus]),
  );

  // 3. Start one for the settings page; its startup notifications arrive on the way.
  const started = await client.request("mcpServer/start", { name: "fx" });
  log("started", [started.status.runtimeStatus, Object.keys(started.status.tools).length]);

  // 4. A thread, the tools its model may see, and a search.
  const { thread } = await client.request("thread/start", { name: "example", servers: ["fx"] });
  const visible = await client.request("mcpTool/listForContext", { threadId: thread.id });
  const names = visible.data.map((tool) => tool.name);
  log("tools", names.length);
  const found = await client.request("mcpTool/search", { query: "echo", threadId: thread.id });
  const selected = await client.request("mcpTool/search", {
    query: `select:${toolFullName("fx", "add")},${toolFullName("fx", "nope")}`,
    threadId: thread.id,
  });

  // 5. Tool calls: progress as it runs, then one that asks the user through an elicitation.
  const progress: number[] = [];
  const stopProgress = client.on("mcpServer/tool/progress", (update) => progress.push(update.progress));
  const call = async (tool: string, args: { [key: string]: unknown }) =>
    client.request("mcpServer/tool/call", { threadId: thread.id, server: "fx", tool, arguments: args });
  const done = await call("progress", { steps: 3, delay_ms: 5 });
  stopProgress();
  const asked = await call("ask", { question: "Who are you?" });
  const askedText = asked.content[0]?.type === "text" ? asked.content[0].text : "";
  log("called", { progress, asked: askedText });

  // 6. Prompts and resources (a preview never carries a whole blob).
  const prompts = [];
  for await (const prompt of client.paginate("mcpPrompt/list", { threadId: thread.id })) prompts.push(prompt.name);
  const prompt = await client.request("mcpPrompt/get", { server: "fx", name: "greet", arguments: { name: "Ada" } });
  const message = prompt.messages[0]?.content;
  const resources = await client.request("mcpResource/list", { server: "fx" });
  const preview = await client.request("mcpServer/resource/read", {
    server: "fx",
    uri: "fixture://static/blob",
    preview: true,
  });
  const blob = preview.contents[0];
  log("resources", { resources: resources.resources.length, templates: resources.resourceTemplates.length });

  // 7. A subscription: the thread's server says the resource changed.
  const uri = "fixture://static/hello";
  const updated = new Promise<string>((resolve) => {
    const stop = client.on("mcp:resource_updated", (update) => {
      if (update.uri !== uri || update.threadId !== thread.id) return;
      stop();
      resolve(update.uri);
    });
  });
  await client.request("mcpResource/subscribe", { server: "fx", uri, threadId: thread.id });
  await call("touch_resource", { uri });
  const updatedUri = await updated;
  await client.request("mcpResource/unsubscribe", { server: "fx", uri, threadId: thread.id });

  // 8. Typed errors: branch on the reason, read its details.
  const reasons: { [reason: string]: unknown } = {};
  try {
    await client.request("mcpPrompt/get", { server: "fx", name: "nope" });
  } catch (error) {
    if (isAppServerError(error, "unknownPrompt")) reasons[error.reason] = error.data.prompt;
  }
  try {
    await client.request("mcpServer/create", {
      name: "leaky",
      config: { type: "http", url: "https://example.com/mcp", headers: { Authorization: "Bearer x" } },
    });
  } catch (error) {
    if (error instanceof AppServerError && error.is("inlineSecret")) reasons[error.reason] = error.data.header;
  }

  // 9. Lossless editing: the listed config goes back with its "***", and the stored secret is kept.
  if (listed === undefined) throw new Error("fx is not listed");
  const edited = await client.request("mcpServer/update", {
    name: "fx",
    config: { ...listed.config, description: "edited by the host" },
    expectedRevision: listed.revision,
  });
  const stillSecret = "env" in edited.server.config ? edited.server.config.env?.FIXTURE_MODE : undefined;
  try {
    const config = "env" in listed.config ? { ...listed.config, env: { NEW_KEY: "***" } } : listed.config;
    await client.request("mcpServer/update", { name: "fx", config });
  } catch (error) {
    if (isAppServerError(error, "redactedValue")) reasons[error.reason] = error.data.path;
  }

  // 10. Delete, archive, close.
  await client.request("mcpServer/delete", { name: "spare" });
  const remaining = (await client.request("mcpServer/list")).data.map((server) => server.name);
  await client.request("thread/archive", { threadId: thread.id });
  await client.close();

  const summary = {
    server: client.initializeResult?.serverInfo.name,
    servers: servers.map((server) => server.name),
    listedEnv: "env" in listed.config ? listed.config.env : undefined,
    spareStatus: status.data[0]?.runtimeStatus,
    started: started.status.runtimeStatus,
    startups,
    tools: names.map((name) => parseToolFullName(name)?.tool).sort(),
    search: found.data[0]?.name,
    selected: { data: selected.data.map((tool) => tool.name), missing: selected.missing },
    progress,
    done: done.content[0]?.type === "text" ? done.content[0].text : undefined,
    asked: JSON.parse(askedText) as unknown,
    prompts,
    prompt: message?.type === "text" ? message.text : undefined,
    preview:
      blob === undefined ? undefined : { blobBytes: blob.blobBytes, hasBlob: "blob" in blob, sha256: blob.sha256 },
    updated: updatedUri,
    reasons,
    edited: { description: edited.server.config.description, revision: edited.server.revision, env: stillSecret },
    remaining,
  };
  process.stdout.write(`${JSON.stringify(summary)}\n`);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
