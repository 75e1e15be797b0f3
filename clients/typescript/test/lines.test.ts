// The line reader: framing of the daemon's stdout, linear in the input and capped at the daemon's own maximum.
import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_MESSAGE_BYTES } from "mcp-app-server-client";
import type { DroppedLine } from "mcp-app-server-client";

// Internal: the reader is not part of the public API, and this test reads how much it holds.
const built = new URL("../../dist/rpc/lines.js", import.meta.url).href;
const { LineReader } = (await import(built)) as typeof import("../dist/rpc/lines.js");
type LineReader = InstanceType<typeof LineReader>;

function reader(maxBytes = MAX_MESSAGE_BYTES): { lines: string[]; dropped: DroppedLine[]; reader: LineReader } {
  const lines: string[] = [];
  const dropped: DroppedLine[] = [];
  return {
    lines,
    dropped,
    reader: new LineReader(maxBytes, { line: (text) => lines.push(text), dropped: (line) => dropped.push(line) }),
  };
}

const TEXT = ['{"a":"é€😀"}', '{"b":"\\u00e9 ünïcödé ✓"}', "", '{"c":"😀😀"}\r', '{"d":1}'];
const BYTES = new TextEncoder().encode(`${TEXT.join("\n")}\n{"unfinished":`);
const EXPECTED = ['{"a":"é€😀"}', '{"b":"\\u00e9 ünïcödé ✓"}', '{"c":"😀😀"}', '{"d":1}'];

test("a byte stream split at every point, around every multi-byte character, reads the same lines", () => {
  for (let cut = 0; cut <= BYTES.length; cut += 1) {
    const { lines, dropped, reader: r } = reader();
    r.push(BYTES.subarray(0, cut));
    r.push(BYTES.subarray(cut));
    assert.deepEqual(lines, EXPECTED, `cut at byte ${cut}`);
    assert.deepEqual(dropped, []);
  }
  for (let first = 1; first < BYTES.length; first += 1) {
    for (let second = first; second < BYTES.length; second += 7) {
      const { lines, reader: r } = reader();
      for (const piece of [BYTES.subarray(0, first), BYTES.subarray(first, second), BYTES.subarray(second)])
        r.push(piece);
      assert.deepEqual(lines, EXPECTED, `cuts at ${first} and ${second}`);
    }
  }
  const { lines, reader: r } = reader();
  for (const byte of BYTES) r.push(Uint8Array.of(byte));
  assert.deepEqual(lines, EXPECTED);
});

test("text chunks (a stream with an encoding) read the same lines", () => {
  const text = new TextDecoder().decode(BYTES);
  const { lines, reader: r } = reader();
  for (const piece of text.match(/[\s\S]{1,3}/gu) ?? []) r.push(piece);
  assert.deepEqual(lines, EXPECTED);
});

test("a line at the cap is read; one byte more is dropped with its head, and reading resumes after it", () => {
  const cap = 64;
  const { lines, dropped, reader: r } = reader(cap);
  const atCap = `{"id":1,"x":"${"a".repeat(cap - 15)}"}`;
  assert.equal(atCap.length, cap);
  const over = `{"id":2,"x":"${"é".repeat(30)}"}`;
  r.push(`${atCap}\n${over.slice(0, 20)}`);
  r.push(`${over.slice(20)}\n{"id":3}\n`);
  assert.deepEqual(lines, [atCap, '{"id":3}']);
  assert.equal(dropped.length, 1);
  assert.equal(dropped[0]?.problem, "tooLong");
  assert.equal(dropped[0]?.maxBytes, cap);
  assert.ok(dropped[0]?.head.startsWith('{"id":2,"x":"é'));
});

test("a line that is not UTF-8 is dropped, not decoded with replacement characters", () => {
  const { lines, dropped, reader: r } = reader();
  r.push(Uint8Array.of(0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d, 0x0a));
  r.push('{"ok":true}\n');
  assert.deepEqual(lines, ['{"ok":true}']);
  assert.deepEqual(
    dropped.map((line) => line.problem),
    ["notUtf8"],
  );
});

test("a 64 MiB line is skipped holding no more than the cap, and the next line is read", { timeout: 60_000 }, () => {
  const { lines, dropped, reader: r } = reader();
  const chunk = 64 * 1024;
  let most = 0;
  r.push('{"jsonrpc":"2.0","id":7,"result":"');
  for (let sent = 0; sent < 64 * 1024 * 1024; sent += chunk) {
    r.push(new Uint8Array(chunk).fill(0x61));
    most = Math.max(most, r.bufferedBytes);
  }
  r.push('"}\n{"jsonrpc":"2.0","id":8,"result":{}}\n');
  assert.ok(most <= MAX_MESSAGE_BYTES, `held ${most} bytes`);
  assert.equal(r.bufferedBytes, 0);
  assert.deepEqual(lines, ['{"jsonrpc":"2.0","id":8,"result":{}}']);
  assert.equal(dropped.length, 1);
  assert.ok(dropped[0]?.head.startsWith('{"jsonrpc":"2.0","id":7,"result":"aaa'));
  assert.ok((dropped[0]?.head.length ?? Infinity) <= 256);
});
