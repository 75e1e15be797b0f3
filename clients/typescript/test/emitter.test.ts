// The package's one listener set (internal): typed events, a throwing listener reported and the others still called,
// unsubscribing and clearing.
import assert from "node:assert/strict";
import { test } from "node:test";

const built = new URL("../../dist/rpc/emitter.js", import.meta.url).href;
const { Emitter } = (await import(built)) as typeof import("../dist/rpc/emitter.js");

interface Events {
  readonly count: number;
  readonly word: string;
}

test("a listener that throws is reported with its event and the next listener still runs", () => {
  const reported: Array<[string, string]> = [];
  const emitter = new Emitter<Events>((error, event) => reported.push([error.message, String(event)]));
  const seen: number[] = [];
  emitter.on("count", () => {
    throw new Error("boom");
  });
  emitter.on("count", (value) => seen.push(value));
  assert.doesNotThrow(() => emitter.emit("count", 7));
  assert.deepEqual(seen, [7]);
  assert.deepEqual(reported, [["boom", "count"]]);
});

test("a stopped listener gets nothing more, one added while emitting waits for the next event, clear stops all", () => {
  const emitter = new Emitter<Events>(() => assert.fail("nothing throws"));
  const words: string[] = [];
  const late: string[] = [];
  const stop = emitter.on("word", (word) => {
    words.push(word);
    stop();
    emitter.on("word", (next) => late.push(next));
  });
  emitter.emit("word", "one");
  emitter.emit("word", "two");
  assert.deepEqual(words, ["one"]);
  assert.deepEqual(late, ["two"]);
  emitter.clear();
  emitter.emit("word", "three");
  assert.deepEqual(late, ["two"]);
});
