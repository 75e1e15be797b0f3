// Makes the package's generated part from the protocol's artifacts (`make schemas` writes them from the pydantic
// models): src/generated/protocol.ts, the bindings and the daemon's facts, copied as they are; and the guard's
// validators, compiled now by Ajv's standalone code generation and written as JavaScript straight into
// dist/generated/validators.js (their types beside it and in src/generated/ for tsc), so that the package never
// compiles a schema, nor makes code from text, at run time.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import ajvModule from "ajv/dist/2020.js";
import standaloneModule from "ajv/dist/standalone/index.js";

const Ajv2020 = ajvModule.default;
const standaloneCode = standaloneModule.default;
const schemas = new URL("../../../schemas/", import.meta.url);
const out = new URL("../src/generated/", import.meta.url);
const dist = new URL("../dist/generated/", import.meta.url);
const BUNDLE_ID = "mcp-app-server-protocol";
const ENVELOPES = ["JsonRpcRequest", "JsonRpcNotification", "JsonRpcSuccessResponse", "JsonRpcErrorResponse"];
const ANNOTATIONS = new Set(["description", "title", "examples", "default", "$comment"]);
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "dependentSchemas"]);

/** The schema without the keywords that only describe (descriptions are most of its bytes and check nothing). */
function checksOnly(schema) {
  if (Array.isArray(schema)) return schema.map(checksOnly);
  if (schema === null || typeof schema !== "object") return schema;
  const kept = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (ANNOTATIONS.has(keyword)) continue;
    kept[keyword] = SCHEMA_MAPS.has(keyword)
      ? Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, checksOnly(sub)]))
      : ["enum", "const", "required"].includes(keyword)
        ? value
        : checksOnly(value);
  }
  return kept;
}

const defName = (ref) => ref.$ref.replace("#/$defs/", "");
const pairs = (table) =>
  Object.fromEntries(
    Object.entries(table.properties).map(([method, pair]) => [
      method,
      { params: defName(pair.properties.params), result: defName(pair.properties.result) },
    ]),
  );

const bundle = JSON.parse(readFileSync(new URL("protocol.schema.json", schemas), "utf8"));
const tables = {
  results: Object.fromEntries(Object.entries(pairs(bundle.properties.methods)).map(([m, pair]) => [m, pair.result])),
  notifications: Object.fromEntries(
    Object.entries(bundle.properties.notifications.properties).map(([method, ref]) => [method, defName(ref)]),
  ),
  serverRequests: pairs(bundle.properties.serverRequests),
};
const checked = [
  ...new Set([
    ...ENVELOPES,
    ...Object.values(tables.results),
    ...Object.values(tables.notifications),
    ...Object.values(tables.serverRequests).flatMap((pair) => [pair.params, pair.result]),
  ]),
].sort();

const ajv = new Ajv2020({
  discriminator: true,
  allErrors: false,
  inlineRefs: false,
  strict: true,
  code: { source: true, esm: true, lines: false, optimize: true },
});
ajv.addSchema({ ...checksOnly(bundle), $id: BUNDLE_ID });
const code = standaloneCode(ajv, Object.fromEntries(checked.map((name) => [name, `${BUNDLE_ID}#/$defs/${name}`])));

// Standalone code reaches Ajv's small run-time helpers (such as ucs2length) with `require`, even as ESM. Each is one
// self-contained function: its source is written into the module, so the package needs nothing of Ajv at run time.
const helpers = new Map();
const body = code
  .replace(/^"use strict";/, "")
  .replace(/export const (\w+) = (validate\d+);/g, "const $1 = $2;")
  .replace(/require\("(ajv\/dist\/runtime\/\w+)"\)\.default/g, (_, path) => {
    if (!helpers.has(path)) helpers.set(path, `helper${helpers.size}`);
    return helpers.get(path);
  });
if (/\brequire\(|\bnew Function\b|\beval\(/.test(body)) throw new Error("the standalone code still needs a compiler");
const inlined = [];
for (const [path, name] of helpers) {
  const helper = (await import(`${path}.js`)).default.default;
  if (typeof helper !== "function") throw new Error(`${path} is not one function`);
  inlined.push(`const ${name} = ${helper.toString()};`);
}

const note = (from) => `// Made from schemas/${from} by scripts/generate.mjs. Do not edit.\n`;
const validators = `${note("protocol.schema.json")}// Ajv's standalone code, compiled when the package was built.
${inlined.join("\n")}
${body}
export const validators = { ${checked.join(", ")} };
export const tables = ${JSON.stringify(tables)};
`;
const declarations = `${note("protocol.schema.json")}import type { CompiledValidator, ValidatorTables } from "../rpc/guard.js";
/** The validator of each protocol type the guard checks, by its name in the schema's \`$defs\`. */
export declare const validators: { readonly [name: string]: CompiledValidator };
/** Which type each method's result, each notification's params and each server request are checked against. */
export declare const tables: ValidatorTables;
`;

rmSync(new URL("..", dist), { recursive: true, force: true }); // what tsc writes next is all dist/ holds: no stale module
for (const dir of [out, dist]) mkdirSync(dir, { recursive: true });
writeFileSync(new URL("protocol.ts", out), readFileSync(new URL("typescript/index.ts", schemas)));
writeFileSync(new URL("validators.d.ts", out), declarations);
writeFileSync(new URL("validators.d.ts", dist), declarations);
writeFileSync(new URL("validators.js", dist), validators);
