// `npm pack` gives a tarball a host installs and compiles against under the strict options.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { ROOT, tempDir } from "./support.js";

const run = promisify(execFile);
const PACKAGE = fileURLToPath(new URL("../..", import.meta.url));
const NPM = process.platform === "win32" ? "npm.cmd" : "npm";
const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");

const CONSUMER = `
import { AppServerClient, AppServerError, ERROR_CODES, parseToolFullName, toolFullName } from "mcp-app-server-client";
import type { ElicitationHandler, ErrorDataByReason, ToolCallResult } from "mcp-app-server-client";

export const answer: ElicitationHandler = (request) => {
  const first = Object.values(request.requestedSchema.properties)[0];
  return first?.type === "boolean" ? { action: "accept", content: { ok: true } } : { action: "decline" };
};

export async function use(client: AppServerClient, threadId: string): Promise<string> {
  const result: ToolCallResult = await client.request("mcpServer/tool/call", { threadId, server: "fx", tool: "echo" });
  try {
    await client.request("mcpServer/list", { names: ["nope"] });
  } catch (error) {
    if (error instanceof AppServerError && error.is("unknownServer")) return error.data.server;
  }
  // @ts-expect-error mcpServer/create needs its params
  await client.request("mcpServer/create");
  const scope: ErrorDataByReason["insufficientScope"]["requiredScopes"] = [];
  const block = result.content[0];
  return block?.type === "text" ? block.text : String(scope.length + ERROR_CODES.timeout);
}

const parsed = parseToolFullName(toolFullName("fx", "echo"));
console.log(JSON.stringify(parsed));
`;

test("the packed tarball installs into a new project and compiles strictly", async () => {
  const work = tempDir();
  await run(NPM, ["pack", "--silent", "--pack-destination", work], { cwd: PACKAGE });
  const tarball = readdirSync(work).find((name) => name.endsWith(".tgz"));
  assert.ok(tarball !== undefined, "npm pack made no tarball");

  const project = join(work, "host");
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "host", private: true, type: "module" }));
  await run(NPM, ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", join(work, tarball)], {
    cwd: project,
    timeout: 120_000,
  });
  const installed = join(project, "node_modules", "mcp-app-server-client");
  assert.deepEqual(readdirSync(installed).sort(), ["README.md", "dist", "package.json"]);
  const dist = readdirSync(join(installed, "dist"));
  assert.ok(dist.includes("index.d.ts") && dist.includes("index.js") && dist.includes("generated"));

  writeFileSync(join(project, "consumer.ts"), CONSUMER);
  writeFileSync(
    join(project, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        module: "nodenext",
        moduleResolution: "nodenext",
        target: "es2022",
        skipLibCheck: false,
        outDir: "out",
        typeRoots: [join(ROOT, "node_modules", "@types")],
        types: ["node"],
      },
      files: ["consumer.ts"],
    }),
  );
  await run(process.execPath, [TSC, "-p", project], { cwd: project }).catch((error: { stdout?: string }) => {
    assert.fail(`the consumer does not compile:\n${error.stdout ?? String(error)}`);
  });
  const { stdout } = await run(process.execPath, [join(project, "out", "consumer.js")], { cwd: project });
  assert.deepEqual(JSON.parse(stdout), { server: "fx", tool: "echo" });
});
