// Tool naming helpers against the daemon's own rule: the same corpus goes through mcp_runtime's functions (in the
// checkout's Python) and through the client's, so a drift between the two sides fails here.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { TOOL_NAME_RULE, extensionKey, isServerName, parseToolFullName, toolFullName } from "mcp-app-server-client";
import { PYTHON, ROOT } from "./support.js";

const SERVERS = [
  "github",
  "a",
  "A-Z_09",
  "s".repeat(24),
  "s".repeat(25),
  "",
  "a__b",
  "a_",
  "_a",
  "__",
  "-",
  "a___b",
  "my-server_1",
  "git hub",
  "a.b",
  "a/b",
  "é",
  "ａ",
  "a\n",
  "a\u200b",
  "\u0000",
  "😀",
  "ǅ",
  "İ",
];
const TOOLS = ["create_issue", "t", "a__b", "_x", "x_", "__", "Tool-2", "x.y", "", "é", "t".repeat(60), "a b", "😀"];
const NAMES = [
  "mcp__",
  "mcp____x",
  "MCP__a__b",
  "mcp__a",
  "mcp__a__",
  "mcp__a___b",
  "mcp__a____b",
  "mcp___a__b",
  "mcp__a__b__c",
  "github__create_issue",
  "mcp__github__create_issue\n",
  " mcp__a__b",
  `mcp__s__${"t".repeat(56)}`,
  `mcp__s__${"t".repeat(57)}`,
  "mcp__é__x",
  "mcp__a__é",
  "mcp__😀__x",
];

const DAEMON_RULE = `
import json, sys
from mcp_runtime.catalog.names import full_name, split_full_name
from mcp_runtime.config.rules import check_server_name
from protocol.jsonrpc import AppError

def accepts(name):
    try:
        check_server_name(name)
    except AppError:
        return False
    return True

def full(server, tool):
    try:
        return full_name(server, tool)
    except AppError:
        return None

corpus = json.load(sys.stdin)
json.dump({
    "servers": [accepts(name) for name in corpus["servers"]],
    "full": [full(server, tool) for server, tool in corpus["pairs"]],
    "split": [split_full_name(name) for name in corpus["names"]],
}, sys.stdout)
`;

interface DaemonAnswers {
  servers: boolean[];
  full: (string | null)[];
  split: ([string, string] | null)[];
}

function daemonRule(corpus: { servers: string[]; pairs: [string, string][]; names: string[] }): DaemonAnswers {
  const out = execFileSync(PYTHON, ["-c", DAEMON_RULE], { cwd: ROOT, input: JSON.stringify(corpus), timeout: 60_000 });
  return JSON.parse(out.toString()) as DaemonAnswers;
}

test("the client names tools exactly as the daemon's catalog does", () => {
  const pairs = SERVERS.flatMap((server) => TOOLS.map((tool): [string, string] => [server, tool]));
  const names = [...NAMES, ...pairs.map(([server, tool]) => toolFullName(server, tool))];
  const daemon = daemonRule({ servers: SERVERS, pairs, names });

  assert.deepEqual(
    SERVERS.map((name) => isServerName(name)),
    daemon.servers,
    "isServerName vs check_server_name",
  );
  assert.deepEqual(
    names.map((name) => {
      const parsed = parseToolFullName(name);
      return parsed === undefined ? null : [parsed.server, parsed.tool];
    }),
    daemon.split,
    "parseToolFullName vs split_full_name",
  );
  const accepted = pairs.filter((_, index) => daemon.full[index] !== null);
  assert.ok(accepted.length > 20 && accepted.length < pairs.length, "the corpus has names on both sides of the rule");
  assert.deepEqual(
    accepted.map(([server, tool]) => toolFullName(server, tool)),
    daemon.full.filter((name) => name !== null),
    "toolFullName vs full_name",
  );
});

test("the rule's facts are the generated ones", () => {
  assert.equal(
    toolFullName("github", "create_issue"),
    `${TOOL_NAME_RULE.prefix}github${TOOL_NAME_RULE.separator}create_issue`,
  );
  assert.deepEqual(parseToolFullName("mcp__fx__a__b"), { server: "fx", tool: "a__b" });
  assert.equal(extensionKey("github"), `${TOOL_NAME_RULE.prefix}github`);
});
