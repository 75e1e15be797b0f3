// What the build ships: validators compiled by Ajv when the package was built, no schema compiler and no code made from
// text at run time (a renderer's CSP without 'unsafe-eval'), and a package that depends on nothing.
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { spawnDaemon, ROOT } from "./support.js";

const PACKAGE = fileURLToPath(new URL("../..", import.meta.url));
const DIST = join(PACKAGE, "dist");

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

test("this suite runs where code cannot be made from text, and the client works there against the daemon", async () => {
  // package.json runs the tests under `node --disallow-code-generation-from-strings`, as a strict CSP would.
  assert.throws(() => new Function("return 1"), EvalError);
  assert.throws(() => eval("1"), EvalError);
  const client = await spawnDaemon();
  const listed = await client.request("mcpServer/list");
  assert.deepEqual(listed.data, []);
  await assert.rejects(
    client.request("mcpServer/list", { names: ["nope"] }),
    (error: unknown) => error instanceof Error && error.name === "AppServerError",
  );
  await client.close();
});

test("the built package has no schema compiler and no code-from-text path, and depends on nothing", () => {
  const scripts = files(DIST).filter((path) => path.endsWith(".js"));
  assert.ok(scripts.some((path) => path.endsWith(join("generated", "validators.js"))));
  for (const path of scripts) {
    const text = readFileSync(path, "utf8");
    assert.doesNotMatch(text, /from\s+["']ajv|import\(\s*["']ajv|require\(/, path);
    assert.doesNotMatch(text, /\bnew Function\b|\beval\(|\bFunction\(/, path);
  }
  const manifest = JSON.parse(readFileSync(join(PACKAGE, "package.json"), "utf8")) as {
    dependencies?: object;
    devDependencies: { [name: string]: string };
  };
  assert.equal(manifest.dependencies, undefined);
  assert.ok("ajv" in manifest.devDependencies, "Ajv compiles the validators when the package is built");
});

test("the compiled validators cover every result, notification and server request of the protocol's schema", async () => {
  const schema = JSON.parse(readFileSync(join(ROOT, "schemas", "protocol.schema.json"), "utf8")) as {
    properties: { [table: string]: { properties: { [method: string]: unknown } } };
  };
  const built = new URL("../../dist/generated/validators.js", import.meta.url).href;
  const { validators, tables } = (await import(built)) as typeof import("../dist/generated/validators.js");
  const methods = (table: string) => Object.keys(schema.properties[table]?.properties ?? {}).sort();
  assert.deepEqual(Object.keys(tables.results).sort(), methods("methods"));
  assert.deepEqual(Object.keys(tables.notifications).sort(), methods("notifications"));
  assert.deepEqual(Object.keys(tables.serverRequests).sort(), methods("serverRequests"));
  const named = [
    ...Object.values(tables.results),
    ...Object.values(tables.notifications),
    ...Object.values(tables.serverRequests).flatMap((pair) => [pair.params, pair.result]),
    "JsonRpcRequest",
    "JsonRpcNotification",
    "JsonRpcSuccessResponse",
    "JsonRpcErrorResponse",
  ];
  for (const name of named) assert.equal(typeof validators[name], "function", name);
  const initialize = validators.InitializeResult;
  assert.ok(initialize !== undefined && !initialize({ serverInfo: {} }));
  assert.ok(initialize.errors?.some((error) => error.message === "must have required property 'protocolVersion'"));
});
