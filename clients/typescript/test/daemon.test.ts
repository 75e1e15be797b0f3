// The client against the real daemon of this checkout and the SDK fixture server.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AppServerClient, AppServerError, ERROR_CODES, isAppServerError } from "mcp-app-server-client";
import type { Thread, ToolProgress } from "mcp-app-server-client";
import { Trace, fixtureConfig, nextEvent, spawnDaemon } from "./support.js";

describe("a client on the real daemon", () => {
  const trace = new Trace();
  let client: AppServerClient;
  let thread: Thread;

  before(async () => {
    client = await spawnDaemon({ trace: trace.record, clientInfo: { name: "client-tests", version: "1.0.0" } });
    await client.request("mcpServer/create", { name: "fx", config: fixtureConfig() });
    ({ thread } = await client.request("thread/start", { name: "tests", servers: ["fx"] }));
  });

  after(async () => {
    await client.close();
  });

  const call = (tool: string, args: { [key: string]: unknown }) =>
    client.request("mcpServer/tool/call", { threadId: thread.id, server: "fx", tool, arguments: args });

  test("spawn resolves after initialize and initialized", async () => {
    assert.equal(client.initializeResult?.serverInfo.name, "mcp-app-server");
    assert.match(client.initializeResult?.userAgent ?? "", /\(client-tests\/1\.0\.0\)$/);
    const sent = trace.lines.filter((line) => line.direction === "out").map((line) => line.message.method);
    assert.deepEqual(sent.slice(0, 2), ["initialize", "initialized"]);
  });

  test("a tool call's progress arrives typed through on()", async () => {
    const seen: ToolProgress[] = [];
    const off = client.on("mcpServer/tool/progress", (progress) => seen.push(progress));
    const result = await call("progress", { steps: 3, delay_ms: 5 });
    off();
    assert.deepEqual(
      seen.map((p) => [p.progress, p.total]),
      [
        [1, 3],
        [2, 3],
        [3, 3],
      ],
    );
    assert.ok(seen.every((p) => p.threadId === thread.id && p.server === "fx" && p.tool === "progress"));
    const first = result.content[0];
    assert.equal(first?.type, "text");
    assert.equal(result.projection.truncated, false);
  });

  test("an elicitation is answered through onElicitation with the typed form", async () => {
    const forms: string[] = [];
    const off = client.onElicitation((request) => {
      assert.ok(request.mode === "form");
      for (const [key, field] of Object.entries(request.requestedSchema.properties)) forms.push(`${key}:${field.type}`);
      assert.equal(request.serverName, "fx");
      return { action: "accept", content: { name: "Ada", age: 36 } };
    });
    const resolved = nextEvent(client, "serverRequest/resolved");
    const result = await call("ask", { question: "Who are you?" });
    off();
    assert.deepEqual(forms.sort(), ["age:integer", "name:string"]);
    const first = result.content[0];
    assert.ok(first?.type === "text");
    assert.deepEqual(JSON.parse(first.text), { action: "accept", content: { name: "Ada", age: 36 } });
    assert.equal((await resolved).action, "accept");
  });

  test("a background call answers at once and its result is read later", async () => {
    const done = nextEvent(client, "mcpServer/task/updated", (u) => u.task.status === "completed");
    const task = await client.startBackgroundCall({ threadId: thread.id, server: "fx", tool: "echo", arguments: { text: "bg" } });
    assert.equal(task.status, "working");
    const result = await client.taskResult(thread.id, task.taskId);
    const first = result.content[0];
    assert.ok(first?.type === "text" && first.text === "bg");
    assert.equal((await done).task.taskId, task.taskId);
    assert.ok((await client.listTasks(thread.id)).some((t) => t.taskId === task.taskId && t.status === "completed"));
  });

  test("a server without completions suggests nothing", async () => {
    const answer = await client.complete({
      server: "fx",
      threadId: thread.id,
      ref: { type: "prompt", name: "greet" },
      argument: { name: "name", value: "A" },
    });
    assert.deepEqual(answer, { values: [], hasMore: false });
  });

  test("with no elicitation handler the client answers cancel and nothing hangs", async () => {
    const resolved = nextEvent(client, "serverRequest/resolved");
    const result = await call("ask", { question: "Anyone?" });
    const first = result.content[0];
    assert.ok(first?.type === "text");
    assert.equal(JSON.parse(first.text).action, "cancel");
    assert.equal((await resolved).action, "cancel");
  });

  test("a later onElicitation replaces the handler; removing a replaced one changes nothing, the current one cancel", async () => {
    const action = async (): Promise<string> => {
      const result = await call("ask", { question: "Who?" });
      const first = result.content[0];
      assert.ok(first?.type === "text");
      return JSON.parse(first.text).action as string;
    };
    const offFirst = client.onElicitation(() => ({ action: "decline" }));
    const offSecond = client.onElicitation(() => ({ action: "accept", content: { name: "Bo", age: 5 } }));
    assert.equal(await action(), "accept");
    offFirst();
    assert.equal(await action(), "accept");
    offSecond();
    assert.equal(await action(), "cancel");
    const offThrowing = client.onElicitation(() => {
      throw new Error("the form broke");
    });
    const reported = nextEvent(client, "error", (error) => error.message === "the form broke");
    assert.equal(await action(), "cancel");
    await reported;
    offThrowing();
  });

  test("an AbortSignal sends $/cancelRequest and the daemon answers cancelled", async () => {
    const controller = new AbortController();
    const pending = client.request(
      "mcpServer/tool/call",
      { threadId: thread.id, server: "fx", tool: "sleep", arguments: { ms: 60_000 } },
      { signal: controller.signal },
    );
    const sent = await trace.find("out", (m) => m.method === "mcpServer/tool/call" && hasArgs(m, { ms: 60_000 }));
    controller.abort();
    await assert.rejects(pending, (error: unknown) => isAppServerError(error, "cancelled") && error.code === -32800);
    await trace.find("out", (m) => m.method === "$/cancelRequest" && (m.params as { id: unknown }).id === sent.id);
    const answer = await trace.find("in", (m) => m.id === sent.id);
    assert.equal((answer.error as { data: { reason: string } }).data.reason, "cancelled");
  });

  test("a timeout cancels the call upstream too", async () => {
    const pending = client.request(
      "mcpServer/tool/call",
      { threadId: thread.id, server: "fx", tool: "sleep", arguments: { ms: 30_000 } },
      { timeoutMs: 200 },
    );
    await assert.rejects(pending, (error: unknown) => {
      assert.ok(isAppServerError(error, "timeout"));
      assert.equal(error.source, "client");
      assert.equal(error.data.timeoutMs, 200);
      return true;
    });
    const sent = await trace.find("out", (m) => m.method === "mcpServer/tool/call" && hasArgs(m, { ms: 30_000 }));
    const answer = await trace.find("in", (m) => m.id === sent.id);
    assert.equal((answer.error as { data: { reason: string } }).data.reason, "cancelled");
  });

  test("spawn's requestTimeoutMs times out a request that names none, and the daemon cancels the call", async () => {
    const own = new Trace();
    const strict = await spawnDaemon({ trace: own.record, requestTimeoutMs: 300 });
    try {
      const settle = { timeoutMs: 60_000 }; // the set-up may take longer than 300 ms on a loaded machine
      await strict.request("mcpServer/create", { name: "fx", config: fixtureConfig() }, settle);
      const started = await strict.request("thread/start", { servers: ["fx"] }, settle);
      const args = { ms: 30_001 };
      const pending = strict.request("mcpServer/tool/call", {
        threadId: started.thread.id,
        server: "fx",
        tool: "sleep",
        arguments: args,
      });
      await assert.rejects(
        pending,
        (error: unknown) => isAppServerError(error, "timeout") && error.data.timeoutMs === 300,
      );
      const sent = await own.find("out", (m) => m.method === "mcpServer/tool/call" && hasArgs(m, args));
      await own.find("out", (m) => m.method === "$/cancelRequest" && (m.params as { id: unknown }).id === sent.id);
      const answer = await own.find("in", (m) => m.id === sent.id);
      assert.equal((answer.error as { data: { reason: string } }).data.reason, "cancelled");
    } finally {
      await strict.close();
    }
  });

  test("errors are read by their typed reason and data", async () => {
    const listed = await client.request("mcpServer/list", { names: ["nope"] }).catch((error: unknown) => error);
    assert.ok(listed instanceof AppServerError && listed.is("unknownServer"));
    assert.equal(listed.code, ERROR_CODES.unknownServer);
    assert.equal(listed.data.server, "nope");
    assert.equal(listed.method, "mcpServer/list");

    const called = await client
      .request("mcpServer/tool/call", { threadId: thread.id, server: "nope", tool: "echo" })
      .catch((error: unknown) => error);
    assert.ok(isAppServerError(called, "unknownServer"));
    assert.equal(called.data.server, "nope");

    const invalid = await call("echo", { text: 42 }).catch((error: unknown) => error);
    assert.ok(isAppServerError(invalid, "invalidArguments"));
    assert.equal(invalid.data.tool, "echo");
    assert.ok(invalid.data.errors.some((issue) => issue.path.includes("text")));

    const archived = await client
      .request("thread/read", { threadId: "no-such-thread" })
      .catch((error: unknown) => error);
    assert.ok(archived instanceof AppServerError);
    switch (archived.data.reason) {
      case "unknownThread":
        assert.equal(archived.data.threadId, "no-such-thread");
        break;
      default:
        assert.fail(`unexpected reason ${archived.reason}`);
    }
  });

  test("paginate follows nextCursor through every page", async () => {
    const names = ["pa", "pb", "pc", "pd", "pe"];
    for (const name of names) {
      await client.request("mcpServer/create", { name, config: { ...fixtureConfig(), enabled: false } });
    }
    const before = trace.lines.filter((line) => line.message.method === "mcpServer/list").length;
    const seen: string[] = [];
    for await (const server of client.paginate("mcpServer/list", { limit: 2 })) seen.push(server.name);
    assert.deepEqual(seen, ["fx", ...names]);
    const pages = trace.lines.filter((line) => line.message.method === "mcpServer/list").length - before;
    assert.equal(pages, 3);
  });

  test("answers in any order reach their own requests", async () => {
    const slow = call("sleep", { ms: 400 });
    const fast = call("echo", { text: "first" });
    const order: string[] = [];
    await Promise.all([slow.then(() => order.push("slow")), fast.then(() => order.push("fast"))]);
    assert.deepEqual(order, ["fast", "slow"]);
    const echoed = (await fast).content[0];
    assert.ok(echoed?.type === "text" && echoed.text === "first");
  });
});

function hasArgs(message: { [key: string]: unknown }, args: { [key: string]: unknown }): boolean {
  const params = message.params as { arguments?: unknown } | undefined;
  return JSON.stringify(params?.arguments) === JSON.stringify(args);
}
