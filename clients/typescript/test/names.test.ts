// Tool naming helpers: the same rule as the daemon's catalog (split at the first `__` after `mcp__`).
import assert from "node:assert/strict";
import { test } from "node:test";
import { extensionKey, parseToolFullName, toolFullName } from "mcp-app-server-client";

test("toolFullName and parseToolFullName round-trip", () => {
  assert.equal(toolFullName("github", "create_issue"), "mcp__github__create_issue");
  assert.deepEqual(parseToolFullName("mcp__github__create_issue"), { server: "github", tool: "create_issue" });
  assert.deepEqual(parseToolFullName("mcp__fx__a__b"), { server: "fx", tool: "a__b" });
  assert.deepEqual(parseToolFullName(toolFullName("my-server_1", "Tool-2")), { server: "my-server_1", tool: "Tool-2" });
});

test("parseToolFullName refuses what the daemon could not have made", () => {
  for (const name of [
    "github__create_issue", // no prefix
    "mcp__github", // no tool
    "mcp____tool", // no server
    "mcp__github__", // empty tool
    "mcp__git hub__x", // a server name outside [A-Za-z0-9_-]
    "mcp__github__x.y", // a tool name outside [A-Za-z0-9_-]
    `mcp__${"s".repeat(25)}__x`, // a server name over 24 characters
    `mcp__s__${"t".repeat(60)}`, // over 64 characters in all
  ]) {
    assert.equal(parseToolFullName(name), undefined, name);
  }
});

test("extensionKey names a server's extension", () => {
  assert.equal(extensionKey("github"), "mcp__github");
});
