// Tool naming: a model sees each tool as `mcp__<server>__<tool>`. The daemon
// splits a full name at the first `__` after the prefix; server names never contain `__`.

const PREFIX = "mcp__";
const SEPARATOR = "__";
const SERVER_NAME = /^[A-Za-z0-9_-]{1,24}$/;
const TOOL_NAME = /^[A-Za-z0-9_-]+$/;
const MAX_FULL_NAME = 64;

/** A tool's full name, `mcp__<server>__<tool>`, as `mcpTool/list` and models show it. */
export function toolFullName(server: string, tool: string): string {
  return `${PREFIX}${server}${SEPARATOR}${tool}`;
}

/** The server and tool of a full name, or `undefined` when `name` is not one the daemon could have made. */
export function parseToolFullName(name: string): { server: string; tool: string } | undefined {
  if (!name.startsWith(PREFIX) || name.length > MAX_FULL_NAME) return undefined;
  const rest = name.slice(PREFIX.length);
  const split = rest.indexOf(SEPARATOR);
  if (split < 0) return undefined;
  const server = rest.slice(0, split);
  const tool = rest.slice(split + SEPARATOR.length);
  if (!SERVER_NAME.test(server) || !TOOL_NAME.test(tool)) return undefined;
  return { server, tool };
}

/** The key of a server's extension in a host's tool registry: `mcp__<server>`. */
export function extensionKey(server: string): string {
  return `${PREFIX}${server}`;
}
