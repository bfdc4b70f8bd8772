/**
 * The relative-import graph of `main.ts` and `lib/**\/*.ts`, and the cycles in
 * it: between files, and between folders (a folder is the first directory
 * under `lib/`; `main.ts` is a folder of its own). tests/unit/import_graph_test.ts
 * fails on any cycle, so the layering described in docs/architecture.md stays
 * a tree: small shared helpers live in lib/util, pod concepts in lib/api, and a
 * subsystem never imports one that imports it back.
 *
 * Run `deno run --allow-read tools/import_graph.ts` to print the cycles.
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url).pathname;

/** file → the files it imports; paths relative to the repository root. */
export type ImportGraph = Map<string, Set<string>>;

/**
 * Statement imports and re-exports: `import ... from "./x.ts"`,
 * `export ... from "./x.ts"` and `import "./x.ts"`, starting a line (which
 * leaves out the examples inside JSDoc, whose lines start with `*`).
 */
const STATEMENT =
  /^(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']|^import\s*["']([^"']+)["']/gm;
/** `import("./x.ts")` in code. */
const DYNAMIC = /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g;

/**
 * The relative specifiers a module imports, statically or dynamically.
 * Comment lines are skipped, so `{@link import("./x.ts").X}` is not an import.
 * @param source the module's text
 * @returns specifiers starting with `./` or `../`, in order of appearance
 */
export function relativeImports(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(STATEMENT)) out.push((m[1] ?? m[2])!);
  for (const line of source.split("\n")) {
    const start = line.trimStart();
    if (start.startsWith("*") || start.startsWith("//") || start.startsWith("/*")) continue;
    for (const m of line.matchAll(DYNAMIC)) out.push(m[1]!);
  }
  return out.filter((s) => s.startsWith("./") || s.startsWith("../"));
}

/**
 * Joins a relative specifier onto the importing file's directory.
 * @param from the importing file, relative to the root (e.g. `lib/a/b.ts`)
 * @param specifier e.g. `../c/d.ts`
 * @returns the imported file, relative to the root (e.g. `lib/c/d.ts`)
 */
export function resolveImport(from: string, specifier: string): string {
  const parts = from.split("/").slice(0, -1);
  for (const step of specifier.split("/")) {
    if (step === "." || step === "") continue;
    if (step === "..") parts.pop();
    else parts.push(step);
  }
  return parts.join("/");
}

/**
 * The folder a file belongs to for the folder graph.
 * @param file a path relative to the root
 * @returns `lib/<first directory>` for files under lib, else the file itself
 */
export function folderOf(file: string): string {
  const parts = file.split("/");
  return parts[0] === "lib" && parts.length > 2 ? `lib/${parts[1]}` : file;
}

function walk(dir: string, out: string[]): void {
  for (const entry of Deno.readDirSync(`${ROOT}${dir}`)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) walk(path, out);
    else if (entry.isFile && path.endsWith(".ts")) out.push(path);
  }
}

/**
 * Reads `main.ts` and every `.ts` file under `lib/` and collects their
 * relative imports (all kinds: `import type` ties files together as much as a
 * value import does).
 * @returns the file graph, with only edges to files of the repository
 */
export function readImportGraph(): ImportGraph {
  const files = ["main.ts"];
  walk("lib", files);
  const graph: ImportGraph = new Map();
  for (const file of files.sort()) {
    const targets = new Set<string>();
    for (const spec of relativeImports(Deno.readTextFileSync(`${ROOT}${file}`))) {
      targets.add(resolveImport(file, spec));
    }
    graph.set(file, targets);
  }
  return graph;
}

/**
 * Collapses a file graph onto folders; an import within one folder is no edge.
 * @param graph a file graph
 * @returns the folder graph
 */
export function folderGraph(graph: ImportGraph): ImportGraph {
  const out: ImportGraph = new Map();
  for (const [file, targets] of graph) {
    const from = folderOf(file);
    const set = out.get(from) ?? new Set<string>();
    out.set(from, set);
    for (const target of targets) {
      const to = folderOf(target);
      if (to !== from) set.add(to);
    }
  }
  return out;
}

/**
 * The strongly connected components with more than one node, or one node that
 * imports itself (Tarjan's algorithm): each is a set of nodes that all reach
 * one another, i.e. a knot to untie.
 * @param graph any import graph
 * @returns each cycle's nodes, sorted; cycles sorted by their first node
 */
export function findCycles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let next = 0;
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || graph.get(node)?.has(node)) cycles.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return cycles.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/**
 * For each cycle, the edges that stay inside it, so a report says which
 * import closes the knot.
 * @param graph the graph the cycle came from
 * @param cycle one result of {@link findCycles}
 * @returns `a -> b` lines
 */
export function cycleEdges(graph: ImportGraph, cycle: readonly string[]): string[] {
  const members = new Set(cycle);
  return cycle.flatMap((from) =>
    [...(graph.get(from) ?? [])].filter((to) => members.has(to)).map((to) => `${from} -> ${to}`)
  );
}

if (import.meta.main) {
  const files = readImportGraph();
  const folders = folderGraph(files);
  let found = 0;
  for (const [kind, graph] of [["file", files], ["folder", folders]] as const) {
    for (const cycle of findCycles(graph)) {
      found++;
      console.log(`${kind} cycle:\n  ${cycleEdges(graph, cycle).join("\n  ")}`);
    }
  }
  if (found === 0) console.log("no import cycles");
  Deno.exit(found === 0 ? 0 : 1);
}
