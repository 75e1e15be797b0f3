// MCP Apps through the client (SPEC §13): a view read whole with its `_meta.ui`, and the view's own requests scoped
// to its thread and server with origin "app", against the real daemon and the SDK `Apps` fixture server.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { APP_VIEW_MIME_TYPE, AppView, AppViewUnavailable, hasAppView, isAppServerError } from "mcp-app-server-client";
import type { AppServerClient, Thread, ToolView } from "mcp-app-server-client";
import { FIXTURES, PYTHON, fixtureConfig, spawnDaemon } from "./support.js";

describe("a host runs a server's view through the client", () => {
  let client: AppServerClient;
  let thread: Thread;
  let tools: ToolView[];

  const tool = (name: string): ToolView => {
    const found = tools.find((candidate) => candidate.tool === name && candidate.server === "apps");
    assert.ok(found, `the catalog lists ${name}`);
    return found;
  };

  before(async () => {
    client = await spawnDaemon({ capabilities: { mcpApps: {} } });
    await client.request("mcpServer/create", {
      name: "apps",
      config: { command: PYTHON, args: [join(FIXTURES, "app_server.py")] },
    });
    await client.request("mcpServer/create", { name: "fx", config: fixtureConfig() });
    ({ thread } = await client.request("thread/start", { name: "views", servers: ["apps", "fx"] }));
    tools = (await client.request("mcpTool/listForContext", { threadId: thread.id, includeDeferred: true })).data;
  });

  after(async () => {
    await client.close();
  });

  test("the opening call's view is read whole, with its CSP, and its result is handed over as MCP sends it", async () => {
    const opener = tool("show_counter");
    assert.ok(hasAppView(opener));
    const result = await client.request("mcpServer/tool/call", {
      threadId: thread.id,
      server: "apps",
      tool: "show_counter",
      arguments: { start: 5 },
    });
    const view = await AppView.open(client, { threadId: thread.id, tool: opener });
    assert.equal(view.resourceUri, "ui://counter/view.html");
    assert.equal(view.server, "apps");
    assert.match(view.html, /<h1 id="title">Counter view<\/h1>/);
    assert.match(view.html, /<\/html>\s*$/, "the whole document, not a preview cut");
    assert.deepEqual(view.ui.csp?.connectDomains, ["https://api.example.test"]);
    assert.equal(view.ui.prefersBorder, true);
    const handed = AppView.toolResult(result);
    assert.deepEqual(handed.structuredContent, { count: 5 });
    assert.equal("projection" in handed, false, "the view gets MCP's CallToolResult, not the model's projection");
  });

  test("the view calls its app-only tool, and the daemon refuses it a model-only one", async () => {
    const view = await AppView.open(client, { threadId: thread.id, tool: tool("show_counter") });
    await client.request("mcpServer/tool/call", {
      threadId: thread.id,
      server: "apps",
      tool: "show_counter",
      arguments: { start: 1 },
    });
    const counted = await view.callTool({ name: "increment", arguments: { by: 2 } });
    assert.deepEqual(counted.structuredContent, { count: 3 });
    await assert.rejects(view.callTool({ name: "reset_counter" }), (error: unknown) => {
      assert.ok(isAppServerError(error, "toolNotAllowed"));
      assert.deepEqual(error.data.visibility, ["model"]);
      return true;
    });
    // The model neither sees nor reaches what only the view may call.
    assert.equal(tools.some((candidate) => candidate.tool === "increment"), false);
    await assert.rejects(
      client.request("mcpServer/tool/call", { threadId: thread.id, server: "apps", tool: "increment" }),
      (error: unknown) => isAppServerError(error, "toolNotAllowed"),
    );
  });

  test("a view's reads and lists stay on its own server", async () => {
    const view = await AppView.open(client, { threadId: thread.id, tool: tool("show_counter") });
    const listed = await view.listResources();
    const uris = listed.resources.map((resource) => resource.uri);
    assert.ok(uris.includes("ui://counter/view.html"));
    assert.ok(uris.every((uri) => uri.startsWith("ui://counter/")), `only the apps server's resources: ${uris}`);
    assert.equal("server" in (listed.resources[0] ?? {}), false, "MCP's shape, without the daemon's server field");
    const read = await view.readResource({ uri: "ui://counter/view.html" });
    assert.equal(read.contents[0]?.mimeType, APP_VIEW_MIME_TYPE);
    await assert.rejects(view.callTool({ name: "echo", arguments: { text: "x" } }), (error: unknown) =>
      isAppServerError(error, "unknownTool"),
    );
  });

  test("a tool without a view, or one naming a resource that is not a view, fails typed", async () => {
    const plain = tool("supports_apps");
    assert.equal(hasAppView(plain), false);
    await assert.rejects(AppView.open(client, { threadId: thread.id, tool: plain }), (error: unknown) => {
      assert.ok(error instanceof AppViewUnavailable);
      assert.equal(error.kind, "noView");
      return true;
    });
    const echo = tools.find((candidate) => candidate.server === "fx" && candidate.tool === "echo");
    assert.ok(echo);
    const notHtml = { ...echo, ui: { resourceUri: "fixture://static/hello", visibility: ["model", "app"] } } as ToolView;
    await assert.rejects(AppView.open(client, { threadId: thread.id, tool: notHtml }), (error: unknown) => {
      assert.ok(error instanceof AppViewUnavailable);
      assert.equal(error.kind, "notHtml");
      return true;
    });
  });

  test("the servers of a host that renders views know it", async () => {
    const answer = await client.request("mcpServer/tool/call", {
      threadId: thread.id,
      server: "apps",
      tool: "supports_apps",
    });
    assert.deepEqual(answer.content[0], { type: "text", text: "yes" });
  });
});
