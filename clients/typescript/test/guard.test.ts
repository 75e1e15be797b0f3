// The fail-closed guard, driven by a double that speaks the wire (the daemon never sends these malformed messages).
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  AppServerClient,
  AppServerError,
  ProtocolViolation,
  isAppServerError,
  streamTransport,
} from "mcp-app-server-client";
import type { ElicitationRequest, ServerRecord } from "mcp-app-server-client";
import { nextEvent } from "./support.js";
import { INITIALIZE_RESULT, WireDouble } from "./wire.js";

const RECORD: ServerRecord = {
  name: "fx",
  config: { command: "python3", args: ["server.py"] },
  enabled: true,
  revision: 1,
  source: "user",
  createdAt: "2026-01-01T00:00:00Z",
  updatedAt: "2026-01-01T00:00:00Z",
};

const FORM: ElicitationRequest = {
  threadId: "t1",
  turnId: null,
  serverName: "fx",
  mode: "form",
  message: "Who are you?",
  requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
};

async function setUp(): Promise<{ wire: WireDouble; client: AppServerClient; errors: Error[] }> {
  const wire = new WireDouble();
  const client = await wire.client();
  const errors: Error[] = [];
  client.on("error", (error) => errors.push(error));
  return { wire, client, errors };
}

test("a result that does not match its method's schema rejects with ProtocolViolation", async () => {
  const { wire, client } = await setUp();
  const listing = client.request("mcpServer/list");
  const request = await wire.next((m) => m.method === "mcpServer/list");
  wire.reply(request, { data: [{ ...RECORD, revision: "one" }] });
  await assert.rejects(listing, (error: unknown) => {
    assert.ok(error instanceof ProtocolViolation);
    assert.equal(error.kind, "response");
    assert.equal(error.method, "mcpServer/list");
    assert.ok(error.issues.some((issue) => issue.path === "/result/data/0/revision"));
    return true;
  });
  const again = client.request("mcpServer/list");
  wire.reply(await wire.next((m) => m.method === "mcpServer/list"), { data: [RECORD] });
  assert.deepEqual((await again).data, [RECORD]);
  await client.close();
});

test("a field the protocol does not have is a violation, not something to pass on", async () => {
  const { wire, client } = await setUp();
  const listing = client.request("mcpServer/list");
  wire.reply(await wire.next((m) => m.method === "mcpServer/list"), { data: [], injected: "<script>" });
  await assert.rejects(listing, ProtocolViolation);
  await client.close();
});

test("an error answer is checked too: a reason the protocol lacks, or a reason without its details", async () => {
  const { wire, client } = await setUp();
  const unknownReason = client.request("mcpServer/list");
  wire.fail(await wire.next((m) => m.method === "mcpServer/list"), {
    code: -32010,
    message: "gone",
    data: { reason: "vanished" },
  });
  await assert.rejects(unknownReason, (error: unknown) => error instanceof ProtocolViolation && error.kind === "error");

  const missingDetail = client.request("thread/read", { threadId: "t" });
  wire.fail(await wire.next((m) => m.method === "thread/read"), {
    code: -32010,
    message: "no thread",
    data: { reason: "unknownThread" },
  });
  await assert.rejects(missingDetail, (error: unknown) => error instanceof ProtocolViolation);

  const typed = client.request("thread/read", { threadId: "t" });
  wire.fail(await wire.next((m) => m.method === "thread/read"), {
    code: -32010,
    message: "no thread",
    data: { reason: "unknownThread", threadId: "t" },
  });
  await assert.rejects(
    typed,
    (error: unknown) => isAppServerError(error, "unknownThread") && error.data.threadId === "t",
  );
  await client.close();
});

test("a malformed notification never reaches its handlers; it is reported", async () => {
  const { wire, client, errors } = await setUp();
  const seen: number[] = [];
  client.on("mcpServer/tool/progress", (progress) => seen.push(progress.progress));
  const progress = { threadId: "t", turnId: null, requestId: 1, server: "fx", tool: "slow" };
  const valid = nextEvent(client, "mcpServer/tool/progress");
  wire.send({ method: "mcpServer/tool/progress", params: { ...progress, progress: "half" } });
  wire.send({ method: "mcp:server_started", params: { server: "fx" } });
  wire.line("{not json");
  wire.send({ method: "mcpServer/tool/progress", params: { ...progress, progress: 1 } });
  await valid;
  assert.deepEqual(seen, [1]);
  assert.deepEqual(
    errors.map((error) => (error as ProtocolViolation).kind),
    ["notification", "notification", "message"],
  );
  await client.close();
});

test("a malformed elicitation form is answered cancel without calling the handler", async () => {
  const { wire, client, errors } = await setUp();
  let called = false;
  client.onElicitation(() => {
    called = true;
    return { action: "accept", content: {} };
  });
  const nested = { ...FORM.requestedSchema, properties: { address: { type: "object", properties: {} } } };
  wire.send({ id: "srv-1", method: "mcpServer/elicitation/request", params: { ...FORM, requestedSchema: nested } });
  const answer = await wire.next((m) => m.id === "srv-1");
  assert.deepEqual(answer.result, { action: "cancel" });
  assert.equal(called, false);
  assert.ok(errors[0] instanceof ProtocolViolation && errors[0].kind === "serverRequest");
  await client.close();
});

test("the elicitation handler answers; a throwing or wrong handler answers cancel", async () => {
  const { wire, client, errors } = await setUp();
  const answers = [
    (): { action: "accept"; content: { name: string } } => ({ action: "accept", content: { name: "Ada" } }),
    (): never => {
      throw new Error("the form broke");
    },
    (): unknown => ({ action: "maybe" }),
  ];
  for (const [index, answer] of answers.entries()) {
    client.onElicitation(answer as () => { action: "cancel" });
    wire.send({ id: `srv-${index}`, method: "mcpServer/elicitation/request", params: FORM });
  }
  const results = await Promise.all(answers.map((_, index) => wire.next((m) => m.id === `srv-${index}`)));
  assert.deepEqual(
    results.map((m) => m.result),
    [{ action: "accept", content: { name: "Ada" } }, { action: "cancel" }, { action: "cancel" }],
  );
  assert.equal(errors.length, 2);
  await client.close();
});

test("serverRequest/resolved before the answer aborts the handler's signal and nothing is sent", async () => {
  const { wire, client } = await setUp();
  let called: () => void = () => {};
  const handlerCalled = new Promise<void>((resolve) => {
    called = resolve;
  });
  let abortedSignal: AbortSignal | undefined;
  client.onElicitation((_request, { signal, requestId }) => {
    assert.equal(requestId, "srv-9");
    abortedSignal = signal;
    called();
    return new Promise((resolve) => signal.addEventListener("abort", () => resolve({ action: "accept", content: {} })));
  });
  wire.send({ id: "srv-9", method: "mcpServer/elicitation/request", params: FORM });
  await handlerCalled;
  const resolved = nextEvent(client, "serverRequest/resolved");
  wire.send({ method: "serverRequest/resolved", params: { threadId: "t1", requestId: "srv-9", action: "cancel" } });
  await resolved;
  assert.equal(abortedSignal?.aborted, true);
  await new Promise((resolve) => setImmediate(resolve)); // every microtask of the handler's answer has run
  const listing = client.request("mcpServer/list");
  wire.reply(await wire.next((m) => m.method === "mcpServer/list"), { data: [] });
  await listing;
  assert.deepEqual(
    wire.unread.filter((m) => m.id === "srv-9"),
    [],
  );
  await client.close();
});

test("a server request the protocol lacks is answered methodNotFound", async () => {
  const { wire, client, errors } = await setUp();
  wire.send({ id: "srv-2", method: "sampling/createMessage", params: {} });
  const answer = await wire.next((m) => m.id === "srv-2");
  assert.equal((answer.error as { data: { reason: string } }).data.reason, "methodNotFound");
  assert.ok(errors[0] instanceof ProtocolViolation);
  await client.close();
});

test("answers in any order, notifications and server requests in between, all reach the right place", async () => {
  const { wire, client } = await setUp();
  const first = client.request("mcpServer/list", { names: ["a"] });
  const second = client.request("mcpServer/list", { names: ["b"] });
  const [one, two] = [
    await wire.next((m) => m.method === "mcpServer/list"),
    await wire.next((m) => m.method === "mcpServer/list"),
  ];
  const progress = nextEvent(client, "mcpServer/tool/progress");
  wire.send({
    method: "mcpServer/tool/progress",
    params: { threadId: "t", turnId: null, requestId: one.id as number, server: "fx", tool: "slow", progress: 1 },
  });
  wire.send({ id: "srv-3", method: "mcpServer/elicitation/request", params: FORM });
  wire.reply(two, { data: [{ ...RECORD, name: "b" }] });
  wire.reply(one, { data: [{ ...RECORD, name: "a" }] });
  assert.equal((await first).data[0]?.name, "a");
  assert.equal((await second).data[0]?.name, "b");
  assert.equal((await progress).requestId, one.id);
  assert.deepEqual((await wire.next((m) => m.id === "srv-3")).result, { action: "cancel" });
  await client.close();
});

test("an answer to no request in flight, and an error with id null, are reported", async () => {
  const { wire, client, errors } = await setUp();
  const reported = nextEvent(client, "error", (error) => error instanceof AppServerError);
  wire.send({ id: 999, result: {} });
  wire.send({ id: null, error: { code: -32700, message: "not JSON", data: { reason: "parseError" } } });
  assert.equal(((await reported) as AppServerError).reason, "parseError");
  assert.ok(errors[0] instanceof ProtocolViolation);
  await client.close();
});

test("when the connection ends, requests in flight reject with connectionLost", async () => {
  const { wire, client } = await setUp();
  const exit = nextEvent(client, "exit");
  const listing = client.request("mcpServer/list");
  await wire.next((m) => m.method === "mcpServer/list");
  wire.hangUp();
  await assert.rejects(
    listing,
    (error: unknown) => isAppServerError(error, "connectionLost") && error.source === "client",
  );
  const info = await exit;
  assert.equal(info.expected, false);
  assert.equal(info.restarting, false);
  await assert.rejects(client.request("mcpServer/list"), (error: unknown) => isAppServerError(error, "connectionLost"));
  await client.closed;
});

test("requests wait for initialize, and none goes out before it is called", async () => {
  const wire = new WireDouble();
  const client = new AppServerClient(streamTransport(wire.toClient, wire.fromClient));
  await assert.rejects(client.request("mcpServer/list"), /initialize/);
  const initializing = client.initialize({ name: "tests", version: "1.0.0" });
  const early = client.request("mcpServer/list");
  const hello = await wire.next();
  assert.equal(hello.method, "initialize");
  wire.reply(hello, INITIALIZE_RESULT);
  assert.equal((await initializing).serverInfo.version, "0.0.0-double");
  assert.equal((await wire.next()).method, "initialized");
  wire.reply(await wire.next((m) => m.method === "mcpServer/list"), { data: [] });
  assert.deepEqual((await early).data, []);
  assert.equal(client.initializeResult?.protocolVersion, "test");
  await client.close();
});

test("a string's length is counted in characters, as JSON Schema says (Ajv's helper, inlined)", async () => {
  const { wire, client } = await setUp();
  const listing = (description: string) => {
    const answer = client.request("mcpServer/list");
    void wire
      .next((m) => m.method === "mcpServer/list")
      .then((request) => wire.reply(request, { data: [{ ...RECORD, config: { ...RECORD.config, description } }] }));
    return answer;
  };
  const fits = await listing("😀".repeat(4096)); // 4096 characters, 8192 UTF-16 code units: the cap is 4096
  assert.equal(fits.data[0]?.config.description?.length, 8192);
  await assert.rejects(listing("😀".repeat(4097)), (error: unknown) => {
    assert.ok(error instanceof ProtocolViolation);
    assert.ok(error.issues.some((issue) => issue.path === "/result/data/0/config/description"));
    return true;
  });
  await client.close();
});
