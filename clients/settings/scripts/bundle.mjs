// Bundles the page (src/page/main.ts and the client runtime it imports, its MCP Apps kit and ext-apps' AppBridge
// included) into dist/page/app.js with esbuild, no plugin (the client's browser condition keeps Node out), and
// copies its HTML and CSS next to it. The MCP Apps sandbox's relay is the client kit's own (apps-host serves it).
import { copyFileSync, mkdirSync } from "node:fs";
import { build } from "esbuild";

const here = (path) => new URL(path, import.meta.url).pathname;
const out = here("../dist/page/");
mkdirSync(out, { recursive: true });

const browser = { bundle: true, platform: "browser", target: "es2022", minify: true, legalComments: "none", logLevel: "warning" };
await build({ ...browser, entryPoints: [here("../src/page/main.ts")], outfile: `${out}app.js`, format: "esm" });
copyFileSync(here("../src/page/index.html"), `${out}index.html`);
copyFileSync(here("../src/page/style.css"), `${out}app.css`);
