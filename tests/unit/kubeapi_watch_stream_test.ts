import assert from "node:assert/strict";
import { JsonObjectSplitter } from "../../lib/kubeapi/watch_stream.ts";

const enc = new TextEncoder();

Deno.test("JsonObjectSplitter.push() yields an object only once its last chunk arrives", () => {
  const s = new JsonObjectSplitter();
  const text = '{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n';
  assert.deepEqual(s.push(enc.encode(text.slice(0, 10))), []);
  assert.ok(s.pending);
  assert.deepEqual(s.push(enc.encode(text.slice(10, 30))), []);
  assert.deepEqual(s.push(enc.encode(text.slice(30))), [text.trim()]);
  assert.ok(!s.pending);
});

Deno.test("JsonObjectSplitter.push() handles braces and quotes inside strings", () => {
  const s = new JsonObjectSplitter();
  const a = JSON.stringify({ type: "MODIFIED", object: { data: { k: 'x}{"\\\n]' } } });
  const b = JSON.stringify({ type: "DELETED", object: { list: [1, { x: "[" }] } });
  const out = s.push(enc.encode(`${a}\n${b}\n`));
  assert.deepEqual(out.map((t) => JSON.parse(t)), [JSON.parse(a), JSON.parse(b)]);
});

Deno.test("JsonObjectSplitter.push() splits objects without newlines between them", () => {
  const s = new JsonObjectSplitter();
  assert.deepEqual(s.push(enc.encode('{"a":1}{"b":2} {"c":')), ['{"a":1}', '{"b":2}']);
  assert.deepEqual(s.push(enc.encode("3}")), ['{"c":3}']);
});

Deno.test("JsonObjectSplitter.push() decodes a UTF-8 character split across chunks", () => {
  const s = new JsonObjectSplitter();
  const bytes = enc.encode('{"msg":"héllo ✓"}');
  const cut = bytes.indexOf(0xc3) + 1; // inside "é"
  assert.deepEqual(s.push(bytes.subarray(0, cut)), []);
  assert.deepEqual(s.push(bytes.subarray(cut)).map((t) => JSON.parse(t).msg), ["héllo ✓"]);
});

Deno.test("JsonObjectSplitter.push() rejects garbage between events", () => {
  const s = new JsonObjectSplitter();
  assert.throws(() => s.push(enc.encode('{"a":1}\nnot json')), /unexpected "n"/);
});
