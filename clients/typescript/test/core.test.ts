// The protocol core seen through the client, driven by a double that speaks the wire: ids, timeouts, over-long
// lines, and waiting for a notification (the daemon never sends these malformed messages or holds answers back).
import assert from "node:assert/strict";
import { test } from "node:test";
import { AppServerClient, MAX_OUTPUT_LINE_BYTES, ProtocolViolation, isAppServerError } from "mcp-app-server-client";
import type { ToolProgress } from "mcp-app-server-client";
import { WireDouble } from "./wire.js";

async function setUp(
  options: ConstructorParameters<typeof AppServerClient>[1] = {},
): Promise<{ wire: WireDouble; client: AppServerClient; errors: Error[] }> {
  const wire = new WireDouble();
  const client = await wire.client(options);
  const errors: Error[] = [];
  client.on("error", (error) => errors.push(error));
  return { wire, client, errors };
}

/** A request and its answer, to know that everything sent before it has been read. */
async function roundTrip(wire: WireDouble, client: AppServerClient): Promise<void> {
  const listing = client.request("mcpServer/list");
  wire.reply(await wire.next((m) => m.method === "mcpServer/list"), { data: [] });
  await listing;
}

const PROGRESS: ToolProgress = { threadId: "t", turnId: null, requestId: 1, server: "fx", tool: "slow", progress: 1 };

test("an answer whose id equals a pending request's only as text rejects that request", async () => {
  const { wire, client, errors } = await setUp();
  const listing = client.request("mcpServer/list");
  const request = await wire.next((m) => m.method === "mcpServer/list");
  assert.equal(typeof request.id, "number");
  wire.send({ id: String(request.id), result: { data: [] } });
  await assert.rejects(listing, (error: unknown) => {
    assert.ok(error instanceof ProtocolViolation);
    assert.equal(error.kind, "response");
    assert.equal(error.method, "mcpServer/list");
    assert.deepEqual(
      error.issues.map((issue) => issue.path),
      ["/id"],
    );
    return true;
  });
  assert.equal(errors.length, 0);
  wire.reply(request, { data: [] }); // the right id now answers nothing
  await roundTrip(wire, client);
  assert.ok(errors[0] instanceof ProtocolViolation && errors[0].issues[0]?.message === "answers no request in flight");
  await client.close();
});

test("a request naming no timeout gets requestTimeoutMs; timeoutMs overrides it; a late answer is dropped", async () => {
  const { wire, client, errors } = await setUp({ requestTimeoutMs: 100 });
  const defaulted = client.request("mcpServer/list", { names: ["a"] });
  const overridden = client.request("mcpServer/list", { names: ["b"] }, { timeoutMs: 60_000 });
  const first = await wire.next((m) => m.method === "mcpServer/list");
  const second = await wire.next((m) => m.method === "mcpServer/list");
  await assert.rejects(defaulted, (error: unknown) => {
    assert.ok(isAppServerError(error, "timeout"));
    assert.equal(error.source, "client");
    assert.equal(error.data.timeoutMs, 100);
    assert.equal(error.data.method, "mcpServer/list");
    return true;
  });
  const cancel = await wire.next((m) => m.method === "$/cancelRequest");
  assert.deepEqual(cancel.params, { id: first.id });
  wire.reply(first, { data: [] });
  wire.reply(second, { data: [] });
  assert.deepEqual((await overridden).data, []);
  await roundTrip(wire, client);
  assert.deepEqual(errors, []);
  await client.close();
});

test("a line longer than the daemon ever writes rejects the request it answers; the client keeps reading", async () => {
  const { wire, client, errors } = await setUp();
  const listing = client.request("mcpServer/list");
  const request = await wire.next((m) => m.method === "mcpServer/list");
  const filler = new Uint8Array(64 * 1024).fill(0x61);
  const body = function* (): Generator<string | Uint8Array> {
    yield `{"jsonrpc":"2.0","id":${String(request.id)},"result":{"data":[],"x":"`;
    for (let sent = 0; sent <= MAX_OUTPUT_LINE_BYTES; sent += filler.length) yield filler;
    yield '"}}';
  };
  await wire.stream(body());
  await assert.rejects(listing, (error: unknown) => {
    assert.ok(error instanceof ProtocolViolation);
    assert.equal(error.method, "mcpServer/list");
    assert.match(error.message, new RegExp(`longer than ${MAX_OUTPUT_LINE_BYTES} bytes`));
    return true;
  });
  await wire.stream([
    '{"jsonrpc":"2.0","method":"mcpServer/tool/progress","params":{"x":"',
    "x".repeat(MAX_OUTPUT_LINE_BYTES),
    '"}}',
  ]);
  await roundTrip(wire, client);
  assert.equal(errors.length, 1);
  assert.ok(errors[0] instanceof ProtocolViolation && errors[0].kind === "message");
  await client.close();
});

test("waitFor resolves with the params of the first notification the predicate accepts", async () => {
  const { wire, client } = await setUp();
  const second = client.waitFor("mcpServer/tool/progress", (progress) => progress.progress === 2);
  const any = client.waitFor("mcpServer/tool/progress");
  for (const progress of [1, 2, 3]) wire.send({ method: "mcpServer/tool/progress", params: { ...PROGRESS, progress } });
  assert.deepEqual(await second, { ...PROGRESS, progress: 2 });
  assert.equal((await any).progress, 1);
  await client.close();
});

test("waitFor gives up: timeout, cancelled, the predicate's error, connectionLost when the client closes", async () => {
  const { wire, client } = await setUp();
  await assert.rejects(client.waitFor("mcp:tools_updated", undefined, { timeoutMs: 50 }), (error: unknown) => {
    assert.ok(isAppServerError(error, "timeout"));
    assert.equal(error.data.timeoutMs, 50);
    return true;
  });
  const controller = new AbortController();
  const aborted = client.waitFor("mcp:tools_updated", undefined, { signal: controller.signal });
  controller.abort();
  await assert.rejects(aborted, (error: unknown) => isAppServerError(error, "cancelled"));
  const throwing = client.waitFor("mcpServer/tool/progress", () => {
    throw new RangeError("the predicate broke");
  });
  wire.send({ method: "mcpServer/tool/progress", params: PROGRESS });
  await assert.rejects(throwing, RangeError);
  const never = client.waitFor("mcp:tools_updated");
  await client.close();
  await assert.rejects(never, (error: unknown) => isAppServerError(error, "connectionLost"));
  await assert.rejects(client.waitFor("exit"), (error: unknown) => isAppServerError(error, "connectionLost"));
});
