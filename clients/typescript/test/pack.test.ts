// `npm pack` in a fresh copy of the package builds it on its own (prepack), and the tarball installs into a strict host
// project that compiles against it and runs a session with the real daemon.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { PYTHON, ROOT, dataDir, tempDir } from "./support.js";

const run = promisify(execFile);
const PACKAGE = fileURLToPath(new URL("../..", import.meta.url));
const NPM = process.platform === "win32" ? "npm.cmd" : "npm";
const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");
const OFFLINE = ["--offline", "--no-audit", "--no-fund", "--loglevel=error"];

const HOST = `
import { AppServerClient, AppServerError, ERROR_CODES, isServerName, parseToolFullName, toolFullName } from "mcp-app-server-client";
import type { ElicitationHandler, ErrorDataByReason, SpawnOptions, ToolCallResult } from "mcp-app-server-client";

export const answer: ElicitationHandler = (request) => {
  if (request.mode === "url") return { action: new URL(request.url).protocol === "https:" ? "accept" : "decline" };
  const first = Object.values(request.requestedSchema.properties)[0];
  return first?.type === "boolean" ? { action: "accept", content: { ok: true } } : { action: "decline" };
};

export async function use(client: AppServerClient, threadId: string): Promise<string> {
  const result: ToolCallResult = await client.request("mcpServer/tool/call", { threadId, server: "fx", tool: "echo" });
  try {
    await client.request("mcpServer/list", { names: ["nope"] }, { timeoutMs: 5_000 });
  } catch (error) {
    if (error instanceof AppServerError && error.is("unknownServer")) return error.data.server;
  }
  // @ts-expect-error mcpServer/create needs its params
  await client.request("mcpServer/create");
  const scope: ErrorDataByReason["insufficientScope"]["requiredScopes"] = [];
  const block = result.content[0];
  return block?.type === "text" ? block.text : String(scope.length + ERROR_CODES.timeout);
}

async function main([python, dataDir, log]: string[]): Promise<void> {
  if (python === undefined || dataDir === undefined || log === undefined) throw new Error("python, data dir, log");
  const options: SpawnOptions = { dataDir, stderr: log, requestTimeoutMs: 60_000, restart: true };
  const client = await AppServerClient.spawn(python, ["-m", "app_server"], options);
  await client.request("mcpServer/create", { name: "fx", config: { command: python, enabled: false } });
  const servers = (await client.request("mcpServer/list")).data.map((server) => server.name);
  const exited = client.waitFor("exit", (exit) => exit.expected, { timeoutMs: 30_000 });
  await client.close();
  const { code } = await exited;
  const parsed = parseToolFullName(toolFullName("fx", "echo"));
  console.log(JSON.stringify({ parsed, servers, code, valid: isServerName("fx") }));
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
`;

/** The package's sources, laid out as in the repository (its build reads ../../schemas), without anything built. */
function freshCopy(): string {
  const repo = tempDir();
  const copy = join(repo, "clients", "typescript");
  for (const name of ["package.json", "tsconfig.json", "tsconfig.base.json", "README.md", "scripts", "src"]) {
    cpSync(join(PACKAGE, name), join(copy, name), {
      recursive: true,
      filter: (path) => !path.includes(join("src", "generated")),
    });
  }
  for (const name of ["protocol.schema.json", join("typescript", "index.ts")]) {
    cpSync(join(ROOT, "schemas", name), join(repo, "schemas", name));
  }
  // Offline: the build's tools come from the workspace's own install, the same versions, as file: dependencies.
  const manifest = JSON.parse(readFileSync(join(copy, "package.json"), "utf8")) as {
    devDependencies: { [name: string]: string };
  };
  for (const name of Object.keys(manifest.devDependencies)) {
    manifest.devDependencies[name] = `file:${join(ROOT, "node_modules", name)}`;
  }
  writeFileSync(join(copy, "package.json"), JSON.stringify(manifest, null, 2));
  return copy;
}

test("npm pack in a fresh copy builds the package; the tarball installs into a strict host that compiles and runs", async () => {
  const copy = freshCopy();
  // The build's tools are already built where they are linked from: their own lifecycle scripts are not rerun.
  await run(NPM, ["install", ...OFFLINE, "--ignore-scripts"], { cwd: copy, timeout: 120_000 });
  assert.ok(!readdirSync(copy).includes("dist"), "nothing is built before packing");
  const work = tempDir();
  await run(NPM, ["pack", "--silent", "--pack-destination", work], { cwd: copy, timeout: 300_000 });
  const tarball = readdirSync(work).find((name) => name.endsWith(".tgz"));
  assert.ok(tarball !== undefined, "npm pack made no tarball");

  const project = join(work, "host");
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "host", private: true, type: "module" }));
  await run(NPM, ["install", ...OFFLINE, join(work, tarball)], { cwd: project, timeout: 120_000 });
  const installed = join(project, "node_modules", "mcp-app-server-client");
  assert.deepEqual(readdirSync(installed).sort(), ["README.md", "dist", "package.json"]);
  const dist = readdirSync(join(installed, "dist"));
  assert.ok(dist.includes("index.d.ts") && dist.includes("index.js") && dist.includes("generated"));
  assert.ok(readdirSync(join(installed, "dist", "generated")).includes("validators.js"));
  const modules = readdirSync(join(project, "node_modules")).filter((name) => !name.startsWith("."));
  assert.deepEqual(modules, ["mcp-app-server-client"], "no runtime dependency");

  writeFileSync(join(project, "host.ts"), HOST);
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
      files: ["host.ts"],
    }),
  );
  await run(process.execPath, [TSC, "-p", project], { cwd: project }).catch((error: { stdout?: string }) => {
    assert.fail(`the host does not compile:\n${error.stdout ?? String(error)}`);
  });
  const log = join(tempDir(), "daemon.log");
  const { stdout } = await run(
    process.execPath,
    ["--disallow-code-generation-from-strings", join(project, "out", "host.js"), PYTHON, dataDir(), log],
    { cwd: ROOT, timeout: 120_000 },
  );
  assert.deepEqual(JSON.parse(stdout), {
    parsed: { server: "fx", tool: "echo" },
    servers: ["fx"],
    code: 0,
    valid: true,
  });
  assert.match(readFileSync(log, "utf8"), /"event": "serving"/);
});
