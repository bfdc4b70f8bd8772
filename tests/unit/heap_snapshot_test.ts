import assert from "node:assert/strict";
import {
  allocationsBy,
  dominators,
  parseHeapSnapshot,
  residentByMapping,
  retainedByTopLevel,
  type SamplingNode,
  selfSizeByLabel,
} from "../../bench/_heap_snapshot.ts";

/**
 * A snapshot in V8's format: root → (GC roots) → Holder → {a, b}; (GC roots) → Other → b,
 * so `b` is shared and only `a` is Holder's alone; a weak edge from Other to `a` keeps
 * nothing.
 */
function snapshot(): string {
  const nodeFields = ["type", "name", "id", "self_size", "edge_count"];
  const types = ["synthetic", "object", "string", "hidden"];
  const strings = ["", "(GC roots)", "Holder", "Other", "aaaa", "bbbb", "x", "y", "w"];
  // [type, name, id, self_size, edge_count]
  const nodes = [
    [0, 0, 1, 0, 1], // 0 root
    [0, 1, 2, 0, 2], // 1 (GC roots)
    [1, 2, 3, 40, 2], // 2 Holder
    [1, 3, 4, 24, 2], // 3 Other
    [2, 4, 5, 100, 0], // 4 string a
    [2, 5, 6, 300, 0], // 5 string b
  ];
  const edgeFields = ["type", "name_or_index", "to_node"];
  const edgeTypes = ["element", "property", "weak"];
  const nf = nodeFields.length;
  // [type, name, to] in node order
  const edges = [
    [0, 1, 1 * nf],
    [0, 1, 2 * nf],
    [0, 2, 3 * nf],
    [1, 6, 4 * nf],
    [1, 7, 5 * nf],
    [1, 7, 5 * nf],
    [2, 8, 4 * nf],
  ];
  return JSON.stringify({
    snapshot: {
      meta: {
        node_fields: nodeFields,
        node_types: [types],
        edge_fields: edgeFields,
        edge_types: [edgeTypes],
      },
    },
    nodes: nodes.flat(),
    edges: edges.flat(),
    strings,
  });
}

Deno.test("parseHeapSnapshot() keeps strong edges and collapses strings to their type", () => {
  const g = parseHeapSnapshot(snapshot());
  assert.equal(g.count, 6);
  assert.deepEqual(g.labels, [
    "synthetic:",
    "synthetic:(GC roots)",
    "object:Holder",
    "object:Other",
    "string",
    "string",
  ]);
  assert.equal(g.firstEdge[4], g.firstEdge[5], "string a has no edges");
  assert.equal(g.firstEdge[4]! - g.firstEdge[3]!, 1, "Other's weak edge is left out");
  assert.deepEqual(selfSizeByLabel(g).get("string"), { bytes: 400, count: 2 });
});

Deno.test("dominators() and retainedByTopLevel() give what each top-level object alone keeps", () => {
  const g = parseHeapSnapshot(snapshot());
  const { idom } = dominators(g);
  assert.deepEqual([...idom], [0, 0, 1, 1, 2, 1]);
  const top = retainedByTopLevel(g);
  assert.deepEqual(top.get("object:Holder"), { bytes: 140, count: 1 });
  assert.deepEqual(top.get("object:Other"), { bytes: 24, count: 1 });
  assert.deepEqual(top.get("string"), { bytes: 300, count: 1 }, "the shared string stands alone");
});

Deno.test("residentByMapping() sorts smaps regions into kinds", () => {
  const region = (range: string, perms: string, path: string, rss: number) =>
    `${range} ${perms} 00000000 00:00 0  ${path}\nSize: 4 kB\nRss: ${rss} kB\n`;
  const text = [
    region("55d000000000-55d000100000", "r-xp", "/usr/bin/deno", 900),
    region("55d000200000-55d000300000", "rw-p", "[heap]", 700),
    region("7f0000000000-7f0000021000", "rw-p", "", 100),
    region("7f0000021000-7f0004000000", "---p", "", 0),
    region("7f0010000000-7f0010040000", "rw-p", "", 256),
    region("7f0010040000-7f0010240000", "rw-p", "", 16),
    region("7f0020000000-7f0020100000", "rwxp", "", 512),
    region("7f0030000000-7f0030001000", "rw-p", "", 4),
  ].join("");
  const kinds = Object.fromEntries(
    [...residentByMapping(text)].map(([k, v]) => [k, Math.round(v * 1024)]),
  );
  assert.deepEqual(kinds, {
    "deno": 900,
    "[heap]": 700,
    "malloc arenas of threads": 100,
    "other anonymous (---p)": 0,
    "V8 heap pages (256 KiB)": 256,
    "thread stacks (2 MiB)": 16,
    "JIT code (anonymous, executable)": 512,
    "other anonymous (rw-p)": 4,
  });
});

Deno.test("allocationsBy() sums a sampling profile by allocating function and by the outermost frame of the program's code", () => {
  const root = "file:///app/";
  const node = (
    functionName: string,
    url: string,
    lineNumber: number,
    selfSize: number,
    children: SamplingNode[] = [],
  ): SamplingNode => ({ callFrame: { functionName, url, lineNumber }, selfSize, children });
  // (root) → timer (runtime) → tick (app) → decode (app) → Map (built-in)
  //                                       → push (built-in)
  //        → poll (runtime, nothing of the app above it) → Map (built-in)
  const head = node("(root)", "", -1, 0, [
    node("listOnTimeout", "ext:deno_node/timers.mjs", 0, 0, [
      node("tick", `${root}lib/loop.ts`, 9, 100, [
        node("decode", `${root}lib/codec.ts`, 41, 30, [node("Map", "", -1, 500)]),
        node("push", "", -1, 70),
      ]),
    ]),
    node("poll", "ext:core/infra.js", 3, 4, [node("Map", "", -1, 8)]),
  ]);
  const own = (c: SamplingNode["callFrame"]) =>
    c.url.startsWith(root) ? `${c.url.slice(root.length)}:${c.lineNumber + 1}` : undefined;
  const { byFunction, byOrigin } = allocationsBy(head, own);
  assert.deepEqual(
    Object.fromEntries(byFunction),
    {
      "tick lib/loop.ts:10": 100,
      "decode lib/codec.ts:42": 30,
      "Map (built-in)": 508,
      "push (built-in)": 70,
      "poll ext:core/infra.js:4": 4,
    },
  );
  assert.deepEqual(
    Object.fromEntries(byOrigin),
    { "tick lib/loop.ts:10": 700, "(outside the program)": 12 },
  );
});
