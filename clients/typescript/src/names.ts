// Tool naming: a model sees each tool as `mcp__<server>__<tool>`. The rule is the daemon's (protocol/tool_names.py),
// generated into TOOL_NAME_RULE; test/names.test.ts runs the daemon's own functions against these.
import { TOOL_NAME_RULE } from "./generated/protocol.js";

const { prefix, separator, serverName, toolName, maxFullName } = TOOL_NAME_RULE;

/** Whether `name` is a server name the daemon accepts: `[A-Za-z0-9_-]`, 1 to 24 characters, never `__`. */
export function isServerName(name: string): boolean {
  return serverName.test(name) && !name.includes(separator);
}

/** A tool's full name, `mcp__<server>__<tool>`, as `mcpTool/list` and models show it. */
export function toolFullName(server: string, tool: string): string {
  return `${prefix}${server}${separator}${tool}`;
}

/** The server and tool of a full name, or `undefined` when `name` is not one the daemon could have made. */
export function parseToolFullName(name: string): { server: string; tool: string } | undefined {
  if (!name.startsWith(prefix) || name.length > maxFullName) return undefined;
  const rest = name.slice(prefix.length);
  const split = rest.indexOf(separator);
  if (split < 0) return undefined;
  const server = rest.slice(0, split);
  const tool = rest.slice(split + separator.length);
  if (!isServerName(server) || !toolName.test(tool)) return undefined;
  return { server, tool };
}

/** The key of a server's extension in a host's tool registry: `mcp__<server>`. */
export function extensionKey(server: string): string {
  return `${prefix}${server}`;
}
