// Compile-time checks of the generated bindings: each `@ts-expect-error` line must fail to type-check.
import { ERROR_CODES } from "../../../schemas/typescript/index.js";
import type {
  ClientRequest, ClientResponseByMethod, ElicitationRequest, ElicitationResponse, ErrorDataByReason, ErrorReason,
  JsonRpcError, PromptGetResult, ServerMessage, ServerNotification, ServerRecord, SkipReason, ToolCallParams,
  ToolCallResult,
} from "../../../schemas/typescript/index.js";

// @ts-expect-error threadId is required even though the daemon answers its absence with threadRequired
export const noThread: ToolCallParams = { server: "fx", tool: "echo" };
export const withThread: ToolCallParams = { threadId: "t", server: "fx", tool: "echo" };

// @ts-expect-error retired names are not methods
export const retired: ClientRequest["method"] = "mcpTool/call";

export const listAll: ClientRequest = { method: "mcpServer/list", id: 1 };
// @ts-expect-error params are required where a parameter is
export const createNothing: ClientRequest = { method: "mcpServer/create", id: 2 };

export function alwaysSent(status: ClientResponseByMethod["mcpServerStatus/list"], record: ServerRecord): number {
  const first = status.data[0];
  if (first === undefined) return 0;
  const defaulted: boolean = record.enabled; // always sent: required
  // @ts-expect-error a listed config is as the user wrote it: a defaulted field may be absent
  const asWritten: boolean = record.config.enabled;
  // @ts-expect-error closed sets are literal unions
  const impossible: boolean = first.runtimeStatus === "running";
  return Object.keys(first.tools).length + Number(defaulted) + Number(impossible) + Number(asWritten);
}

export function narrow(note: ServerNotification): string {
  return note.method === "mcpServer/tool/progress" ? note.params.tool : note.method;
}

export const code: -32602 = ERROR_CODES.threadRequired;
// @ts-expect-error a reason the daemon never sends
export const bogus: ErrorReason = "notImplemented";

// error.data is a union discriminated by reason: details are read only after narrowing.
export function consent(error: JsonRpcError): string | undefined {
  // @ts-expect-error `origin` belongs to originNotAllowed only
  const unnarrowed: string = error.data.origin;
  if (error.data.reason === "originNotAllowed") return error.data.origin + unnarrowed;
  if (error.data.reason === "insufficientScope") return error.data.requiredScopes.join(" ");
  if (error.data.reason === "timeout") return `${error.data.server ?? "?"} ${error.data.timeoutMs ?? 0}`;
  return undefined;
}
export const scopes: ErrorDataByReason["insufficientScope"] = { reason: "insufficientScope", requiredScopes: ["read"] };
// @ts-expect-error a reason's data carries that reason
export const mislabelled: ErrorDataByReason["unknownServer"] = { reason: "unknownTool", server: "a", tool: "b" };

// MCP content blocks, prompt messages and the elicitation form are typed, not `unknown`.
export function render(result: ToolCallResult, prompt: PromptGetResult): string[] {
  const first = result.content[0];
  // @ts-expect-error only a text block has text
  const text: string | undefined = first?.text;
  const blocks = result.content.map((block) =>
    block.type === "text" ? block.text : block.type === "image" ? block.mimeType : block.type === "resource"
      ? block.resource.uri : block.type === "resource_link" ? block.uri : block.data);
  return [...blocks, text ?? "", ...prompt.messages.map((message) => message.role)];
}
export function field(form: ElicitationRequest): string {
  // @ts-expect-error a URL-mode request has no form: requestedSchema may be absent
  form.requestedSchema.properties;
  if (form.mode === "url" || form.requestedSchema === undefined) return form.url ?? "";
  const [name, schema] = Object.entries(form.requestedSchema.properties)[0] ?? ["", undefined];
  if (schema?.type === "boolean") return `${name}: ${String(schema.default ?? false)}`;
  if (schema?.type === "array") return `${name}: ${schema.maxItems ?? "any"}`;
  return name;
}
// @ts-expect-error an answer's values are primitives (or lists of strings)
export const nested: ElicitationResponse = { action: "accept", content: { address: { city: "Paris" } } };
export const skipped: SkipReason[] = ["nameConflict", "alreadyPresent", "inlineSecret"];
// @ts-expect-error skip reasons are a closed set too
export const bogusSkip: SkipReason = "whatever";

// Envelopes: what the daemon sends is a response, an error, a notification or a server request.
export function kind(message: ServerMessage): string {
  if ("error" in message) return message.error.data.reason;
  if ("result" in message) return String(message.id);
  return message.method;
}
