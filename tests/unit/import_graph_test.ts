import assert from "node:assert/strict";
import {
  cycleEdges,
  findCycles,
  folderGraph,
  folderOf,
  type ImportGraph,
  readImportGraph,
  relativeImports,
  resolveImport,
} from "../../tools/import_graph.ts";

function graph(edges: Record<string, string[]>): ImportGraph {
  return new Map(Object.entries(edges).map(([from, to]) => [from, new Set(to)]));
}

Deno.test("no file under lib/ (or main.ts) imports itself back through another", () => {
  const files = readImportGraph();
  assert.ok(files.size > 100, `only ${files.size} files read`);
  const knots = findCycles(files).map((c) => cycleEdges(files, c).join(", "));
  assert.deepEqual(knots, []);
});

Deno.test("no folder under lib/ imports itself back through another", () => {
  const folders = folderGraph(readImportGraph());
  const knots = findCycles(folders).map((c) => cycleEdges(folders, c).join(", "));
  assert.deepEqual(knots, []);
});

Deno.test("relativeImports() reads import and export statements, not doc examples or comments", () => {
  const source = [
    "/**",
    ' * import { x } from "./lib/api/mod.ts";',
    ' * {@link import("./b.ts").B}',
    " */",
    'import type { A } from "./a.ts";',
    "import {",
    "  c,",
    '} from "../c/c.ts";',
    'export { d } from "./d.ts";',
    'export * from "./e.ts";',
    'import "./side_effect.ts";',
    'import { yaml } from "yaml";',
    'const f = await import("./f.ts");',
    '// const g = await import("./g.ts");',
  ].join("\n");
  assert.deepEqual(relativeImports(source), [
    "./a.ts",
    "../c/c.ts",
    "./d.ts",
    "./e.ts",
    "./side_effect.ts",
    "./f.ts",
  ]);
});

Deno.test("resolveImport() and folderOf() place files in lib's first-level folders", () => {
  assert.equal(resolveImport("lib/a/b.ts", "../c/d.ts"), "lib/c/d.ts");
  assert.equal(resolveImport("lib/a/x/b.ts", "../../c/d.ts"), "lib/c/d.ts");
  assert.equal(resolveImport("main.ts", "./lib/a/mod.ts"), "lib/a/mod.ts");
  assert.equal(folderOf("lib/prober/handlers/http.ts"), "lib/prober");
  assert.equal(folderOf("main.ts"), "main.ts");
});

Deno.test("findCycles() finds each knot once and leaves trees alone", () => {
  const g = graph({
    a: ["b"],
    b: ["c"],
    c: ["a", "d"],
    d: ["e"],
    e: ["d"],
    f: ["f"],
    g: ["a"],
  });
  assert.deepEqual(findCycles(g), [["a", "b", "c"], ["d", "e"], ["f"]]);
  assert.deepEqual(cycleEdges(g, ["d", "e"]), ["d -> e", "e -> d"]);
  assert.deepEqual(findCycles(graph({ a: ["b", "c"], b: ["c"], c: [] })), []);
});

Deno.test("folderGraph() drops imports within a folder", () => {
  const folders = folderGraph(graph({
    "lib/a/x.ts": ["lib/a/y.ts", "lib/b/z.ts"],
    "lib/a/y.ts": [],
    "lib/b/z.ts": ["lib/a/y.ts"],
  }));
  assert.deepEqual(findCycles(folders), [["lib/a", "lib/b"]]);
  assert.deepEqual([...folders.get("lib/a")!], ["lib/b"]);
});

/**
 * What the agent loads at start-up: every module of main.ts's static import graph is
 * evaluated and held for the process's life, so each npm package in it costs idle RSS
 * (docs/benchmarks.md, the idle RSS floor). The CRI client speaks gRPC and protobuf
 * itself (lib/cri/_grpc.ts, lib/cri/codec.ts); grpc-js and protobufjs serve only the
 * tests, and @kubernetes/client-node is imported when a kubeconfig asks for it.
 */
Deno.test("main.ts's static module graph holds no npm package but yaml", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "main.ts"],
    cwd: new URL("../../", import.meta.url).pathname,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const graph = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: { specifier: string; dependencies?: { code?: { specifier: string } }[] }[];
  };
  // Follow static imports only (`code`); a dynamic import() is listed with `isDynamic`.
  type Dep = { specifier: string; code?: { specifier: string }; isDynamic?: boolean };
  const bySpecifier = new Map(
    graph.modules.map((m) => [m.specifier, (m.dependencies ?? []) as Dep[]]),
  );
  const root = graph.modules.find((m) => m.specifier.endsWith("/main.ts"))!.specifier;
  const seen = new Set<string>([root]);
  const npm = new Set<string>();
  const queue = [root];
  while (queue.length > 0) {
    for (const dep of bySpecifier.get(queue.pop()!) ?? []) {
      const target = dep.code?.specifier;
      if (dep.isDynamic || target === undefined || seen.has(target)) continue;
      seen.add(target);
      if (target.startsWith("npm:")) npm.add(target.replace(/^npm:\/?(@?[^@]+).*$/, "$1"));
      else queue.push(target);
    }
  }
  assert.ok(seen.size > 300, `${seen.size} modules: the graph was not read`);
  assert.deepEqual([...npm].sort(), ["yaml"]);
});
