// Bundles the page (src/page/main.ts and the client runtime it imports, Ajv and ext-apps' AppBridge included) into
// dist/page/app.js with esbuild, the sandbox's relay into dist/page/sandbox.js, and copies its HTML and CSS next to it. The client's Node-only sidecar module is replaced by a stub:
// the page never spawns a process.
import { copyFileSync, mkdirSync } from "node:fs";
import { build } from "esbuild";

const here = (path) => new URL(path, import.meta.url).pathname;
const out = here("../dist/page/");
mkdirSync(out, { recursive: true });

const nodeOnly = {
  name: "node-only-sidecar",
  setup(builder) {
    builder.onResolve({ filter: /\/sidecar\.js$/ }, (args) =>
      args.importer.includes("mcp-app-server-client") || args.importer.includes("clients/typescript")
        ? { path: "sidecar", namespace: "node-only" }
        : undefined,
    );
    builder.onLoad({ filter: /.*/, namespace: "node-only" }, () => ({
      contents: 'export function startSidecar() { throw new Error("AppServerClient.spawn runs in Node only"); }',
      loader: "js",
    }));
  },
};

const browser = { bundle: true, platform: "browser", target: "es2022", minify: true, legalComments: "none", logLevel: "warning" };
await build({ ...browser, entryPoints: [here("../src/page/main.ts")], outfile: `${out}app.js`, format: "esm", plugins: [nodeOnly] });
// The MCP Apps sandbox's relay: a classic script the host's second origin serves (src/host/sandbox.ts).
await build({ ...browser, entryPoints: [here("../src/page/sandbox-proxy.ts")], outfile: `${out}sandbox.js`, format: "iife" });
copyFileSync(here("../src/page/index.html"), `${out}index.html`);
copyFileSync(here("../src/page/style.css"), `${out}app.css`);
