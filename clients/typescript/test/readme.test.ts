// The README's examples compile, as written, against the package's published types under the strictest options a
// host uses (strict, exactOptionalPropertyTypes, noUncheckedIndexedAccess, nodenext): each TypeScript block is a
// module of its own, after a prelude that declares only what the block leaves to its host (its `client`, its
// container, its own functions). The MCP Apps block is the "view in about ten lines" the README promises.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { ROOT } from "./support.js";

const PACKAGE = fileURLToPath(new URL("../..", import.meta.url));
const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");

const CLIENT = 'import type { AppServerClient } from "mcp-app-server-client";\ndeclare const client: AppServerClient;\n';
/** What each block leaves to its host, by a line of the block that names it. */
const PRELUDES: readonly (readonly [string, string])[] = [
  ['const client = await AppServerClient.spawn("mcp-app-server", [], {\n  dataDir: "/path', ""],
  [
    "requestTimeoutMs: 60_000 });\nawait client.request(\"mcpServer/start\"",
    'import { AppServerClient } from "mcp-app-server-client";\nimport type { ClientParamsByMethod } from "mcp-app-server-client";\n' +
      'declare const dataDir: string;\ndeclare const params: ClientParamsByMethod["mcpServer/tool/call"];\ndeclare const turn: AbortController;\n',
  ],
  ["streamTransport(socket, socket)", ""],
  ["client.paginate(", CLIENT],
  [
    "const stop = client.on(",
    `${CLIENT}declare function showError(name: string, reason: string | undefined): void;\n` +
      "declare function bar(id: string | number, progress: number, total: number | null | undefined): void;\n" +
      "declare function log(...values: unknown[]): void;\n",
  ],
  ["const settled = ", `${CLIENT}import type { StartupStatusUpdated } from "mcp-app-server-client";\n`],
  [
    "isAppServerError(error, \"originNotAllowed\")",
    `${CLIENT}declare function askConsent(origin: string): void;\ndeclare function stepUp(scopes: readonly string[]): void;\n` +
      "declare function showLog(tail: string | null | undefined): void;\ndeclare function retryLater(ms: number | undefined): void;\n" +
      "declare function showMessage(text: string): void;\n",
  ],
  [
    "client.onElicitation(async",
    `${CLIENT}import type { ElicitationFormSchema, ElicitationValue } from "mcp-app-server-client";\n` +
      "declare function showForm(message: string, schema: ElicitationFormSchema, signal: AbortSignal):\n" +
      "  Promise<{ [key: string]: ElicitationValue } | undefined>;\n",
  ],
  [
    "mountAppView(container",
    `${CLIENT}import type { ToolView } from "mcp-app-server-client";\n` +
      "declare const threadId: string;\ndeclare const tool: ToolView;\ndeclare const args: { [key: string]: unknown };\n" +
      "declare const container: HTMLElement;\ndeclare const sandboxUrl: string;\n",
  ],
  [
    "new MessageChannelMain()",
    'import * as readline from "node:readline";\nimport type { ChildProcessWithoutNullStreams } from "node:child_process";\n' +
      'import { AppServerClient, messagePortTransport } from "mcp-app-server-client";\n' +
      "interface PortMain { on(event: \"message\", listener: (event: { data: unknown }) => void): void; postMessage(message: unknown): void; start(): void }\n" +
      "declare class MessageChannelMain { port1: PortMain; port2: PortMain }\n" +
      "declare const child: ChildProcessWithoutNullStreams;\n" +
      "declare const window: { webContents: { postMessage(channel: string, message: unknown, transfer: PortMain[]): void } };\n" +
      "declare const port: MessagePort;\n",
  ],
  ["restart: { initialDelayMs", 'import { AppServerClient } from "mcp-app-server-client";\ndeclare const dataDir: string;\ndeclare function resubscribe(): void;\n'],
  [
    "app.getPath(\"logs\")",
    'import { join } from "node:path";\nimport { AppServerClient } from "mcp-app-server-client";\n' +
      "declare const dataDir: string;\ndeclare const app: { getPath(name: \"logs\"): string };\n",
  ],
];

function blocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? "");
}

test("every TypeScript block of the README compiles against the package's published types, strictly", async () => {
  const found = blocks(readFileSync(join(PACKAGE, "README.md"), "utf8"));
  assert.ok(found.length >= PRELUDES.length, `the README has ${found.length} blocks`);
  // Inside the package, so "mcp-app-server-client" resolves as a host's would: through its exports, to dist/*.d.ts.
  const project = join(PACKAGE, "build", "readme");
  mkdirSync(project, { recursive: true });
  const files = found.map((block, index) => {
    const preludes = PRELUDES.filter(([marker]) => block.includes(marker));
    assert.equal(preludes.length, 1, `README block ${index + 1} has no prelude here (or two):\n${block}`);
    const file = `block${index + 1}.ts`;
    writeFileSync(join(project, file), `${preludes[0]?.[1] ?? ""}${block}export {};\n`);
    return file;
  });
  writeFileSync(
    join(project, "tsconfig.json"),
    JSON.stringify({
      extends: "../../tsconfig.base.json",
      compilerOptions: { noEmit: true, types: ["node"], typeRoots: [join(ROOT, "node_modules", "@types")] },
      files,
    }),
  );
  await promisify(execFile)(process.execPath, [TSC, "-p", project], { cwd: project }).catch(
    (error: { stdout?: string }) => assert.fail(`a README block does not compile:\n${error.stdout ?? String(error)}`),
  );
});

test("the README's MCP Apps block shows a view in about ten lines, the sandbox's included", () => {
  const apps = blocks(readFileSync(join(PACKAGE, "README.md"), "utf8")).find((block) => block.includes("mountAppView("));
  assert.ok(apps !== undefined);
  const code = apps.split("\n").filter((line) => line.trim() !== "" && !line.trim().startsWith("//"));
  assert.ok(code.some((line) => line.includes("AppsSandbox.start(")), "the block starts the sandbox");
  assert.ok(code.length <= 10, `${code.length} lines:\n${code.join("\n")}`);
});
