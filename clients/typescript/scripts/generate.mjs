// Copies the protocol's generated bindings and JSON Schema (made from the pydantic models by `make schemas`) into
// src/generated/, so that the package is built from the one source of truth and ships them.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";

const schemas = new URL("../../../schemas/", import.meta.url);
const out = new URL("../src/generated/", import.meta.url);
const note = (from) => `// Copied from schemas/${from} by scripts/generate.mjs. Do not edit.\n`;

mkdirSync(out, { recursive: true });
writeFileSync(new URL("protocol.ts", out), readFileSync(new URL("typescript/index.ts", schemas)));
const bundle = JSON.parse(readFileSync(new URL("protocol.schema.json", schemas), "utf8"));
const declaration = "export const protocolSchema: { readonly [key: string]: unknown }";
const text = `${note("protocol.schema.json")}${declaration} = ${JSON.stringify(bundle)};\n`;
writeFileSync(new URL("schema.ts", out), text);
