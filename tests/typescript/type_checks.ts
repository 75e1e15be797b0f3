// Compile-time checks of the generated bindings: each `@ts-expect-error` line must fail to type-check.
import { ERROR_CODES } from "../../schemas/typescript/index.js";
import type {
  ClientRequest, ClientResponseByMethod, ErrorReason, ServerNotification, ServerRecord, ToolCallParams,
} from "../../schemas/typescript/index.js";

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
