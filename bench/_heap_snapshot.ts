/**
 * Reading a V8 heap snapshot (the `.heapsnapshot` JSON the inspector's
 * `HeapProfiler.takeHeapSnapshot` streams) and a process's `/proc/PID/smaps`, for
 * bench/heap_per_pod.ts: what the JavaScript heap holds by kind of object, what each
 * top-level object keeps alive (its retained size, from the dominator tree, as Chrome's
 * DevTools computes it), and where the process's resident pages are; and a sampling heap
 * profile (`HeapProfiler.stopSampling`): what was allocated, garbage included, and by what.
 *
 * @module
 */

/** A snapshot's nodes and strong edges, in arrays. */
export interface HeapGraph {
  /** Node count; node 0 is the synthetic root. */
  count: number;
  /** Per node: "type:name" (strings, numbers and code collapsed to their type). */
  labels: string[];
  selfSize: Float64Array;
  /** Per node: where its strong edges start in `edgeTo` (`count + 1` entries). */
  firstEdge: Uint32Array;
  /** Target node of each strong edge. */
  edgeTo: Uint32Array;
}

/** Node types whose names are contents (a string's text), not kinds. */
const COLLAPSED = new Set([
  "string",
  "concatenated string",
  "sliced string",
  "number",
  "code",
  "hidden",
  "array",
]);

/**
 * Parses a heap snapshot.
 * @param text the `.heapsnapshot` JSON
 * @returns its graph, weak edges left out (they keep nothing alive)
 */
export function parseHeapSnapshot(text: string): HeapGraph {
  const snap = JSON.parse(text);
  const meta = snap.snapshot.meta;
  const nodeFields: string[] = meta.node_fields;
  const edgeFields: string[] = meta.edge_fields;
  const nodeTypes: string[] = meta.node_types[0];
  const edgeTypes: string[] = meta.edge_types[0];
  const nodes: number[] = snap.nodes;
  const edges: number[] = snap.edges;
  const strings: string[] = snap.strings;
  const nf = nodeFields.length, ef = edgeFields.length;
  const field = (fields: string[], name: string): number => {
    const at = fields.indexOf(name);
    if (at < 0) throw new Error(`heap snapshot: no ${name} field`);
    return at;
  };
  const iType = field(nodeFields, "type"), iName = field(nodeFields, "name");
  const iSize = field(nodeFields, "self_size"), iEdges = field(nodeFields, "edge_count");
  const eType = field(edgeFields, "type"), eTo = field(edgeFields, "to_node");
  const weak = edgeTypes.indexOf("weak"), shortcut = edgeTypes.indexOf("shortcut");
  const count = nodes.length / nf;
  const labels = new Array<string>(count);
  const selfSize = new Float64Array(count);
  const firstEdge = new Uint32Array(count + 1);
  const edgeTo: number[] = [];
  let e = 0;
  for (let i = 0; i < count; i++) {
    const type = nodeTypes[nodes[i * nf + iType]!]!;
    labels[i] = COLLAPSED.has(type) ? type : `${type}:${strings[nodes[i * nf + iName]!]}`;
    selfSize[i] = nodes[i * nf + iSize]!;
    firstEdge[i] = edgeTo.length;
    for (let k = nodes[i * nf + iEdges]!; k > 0; k--, e++) {
      const t = edges[e * ef + eType];
      if (t !== weak && t !== shortcut) edgeTo.push(edges[e * ef + eTo]! / nf);
    }
  }
  firstEdge[count] = edgeTo.length;
  return { count, labels, selfSize, firstEdge, edgeTo: Uint32Array.from(edgeTo) };
}

/** Bytes and objects of one kind. */
export interface Tally {
  bytes: number;
  count: number;
}

function add(map: Map<string, Tally>, key: string, bytes: number): void {
  const t = map.get(key);
  if (t) {
    t.bytes += bytes;
    t.count++;
  } else map.set(key, { bytes, count: 1 });
}

/**
 * Self sizes summed by label.
 * @param g the graph
 * @returns bytes and count per label
 */
export function selfSizeByLabel(g: HeapGraph): Map<string, Tally> {
  const out = new Map<string, Tally>();
  for (let i = 0; i < g.count; i++) add(out, g.labels[i]!, g.selfSize[i]!);
  return out;
}

/**
 * The immediate dominator of every node reachable from the root, by the iterative
 * algorithm of Cooper, Harvey and Kennedy over a reverse postorder.
 * @param g the graph
 * @returns `idom` (-1 for an unreachable node; the root is its own) and the reverse postorder
 */
export function dominators(g: HeapGraph): { idom: Int32Array; order: Uint32Array } {
  const { count, firstEdge, edgeTo } = g;
  // Reverse postorder by an explicit stack (the graph is far too deep to recurse).
  const post: number[] = [];
  const seen = new Uint8Array(count);
  const stack = [0], next = [firstEdge[0]!];
  seen[0] = 1;
  while (stack.length > 0) {
    const top = stack.length - 1, v = stack[top]!;
    const k = next[top]!;
    if (k < firstEdge[v + 1]!) {
      next[top] = k + 1;
      const w = edgeTo[k]!;
      if (!seen[w]) {
        seen[w] = 1;
        stack.push(w);
        next.push(firstEdge[w]!);
      }
    } else {
      stack.pop();
      next.pop();
      post.push(v);
    }
  }
  const order = Uint32Array.from(post.reverse());
  const rank = new Int32Array(count).fill(-1);
  order.forEach((v, i) => (rank[v] = i));
  // Predecessors, reachable ones only.
  const predCount = new Uint32Array(count + 1);
  for (const v of order) {
    for (let k = firstEdge[v]!; k < firstEdge[v + 1]!; k++) predCount[edgeTo[k]! + 1]!++;
  }
  for (let i = 0; i < count; i++) predCount[i + 1]! += predCount[i]!;
  const preds = new Uint32Array(predCount[count]!);
  const fill = predCount.slice(0, count);
  for (const v of order) {
    for (let k = firstEdge[v]!; k < firstEdge[v + 1]!; k++) preds[fill[edgeTo[k]!]!++] = v;
  }
  const idom = new Int32Array(count).fill(-1);
  idom[0] = 0;
  for (let changed = true; changed;) {
    changed = false;
    for (let i = 1; i < order.length; i++) {
      const v = order[i]!;
      let best = -1;
      for (let k = predCount[v]!; k < predCount[v + 1]!; k++) {
        let p = preds[k]!;
        if (idom[p] === -1) continue;
        if (best === -1) {
          best = p;
          continue;
        }
        let b = best;
        while (p !== b) {
          while (rank[p]! > rank[b]!) p = idom[p]!;
          while (rank[b]! > rank[p]!) b = idom[b]!;
        }
        best = p;
      }
      if (best !== -1 && idom[v] !== best) {
        idom[v] = best;
        changed = true;
      }
    }
  }
  return { idom, order };
}

/**
 * Retained sizes summed by the label of the object that retains them, for the
 * objects just below the root's children (the snapshot's GC root categories): what
 * each top-level object keeps alive that nothing else does.
 * @param g the graph
 * @returns bytes retained and object count per label
 */
export function retainedByTopLevel(g: HeapGraph): Map<string, Tally> {
  const { idom, order } = dominators(g);
  const retained = new Float64Array(g.count);
  for (const v of order) retained[v] = g.selfSize[v]!;
  for (let i = order.length - 1; i > 0; i--) retained[idom[order[i]!]!]! += retained[order[i]!]!;
  const out = new Map<string, Tally>();
  for (const v of order) {
    const d = idom[v]!;
    if (v === 0 || d === 0 || idom[d] !== 0) continue;
    add(out, g.labels[v]!, retained[v]!);
  }
  return out;
}

/**
 * A process's resident memory by kind of mapping, from its smaps: the program's file
 * (the deno binary), other files by name, `[heap]` (malloc's main arena), other malloc
 * arenas (64 MiB-aligned, followed by their reserve), V8's 256 KiB pages, thread
 * stacks (2 MiB), executable anonymous memory (JIT code), and the rest.
 * @param smaps the text of /proc/PID/smaps
 * @returns MiB per kind
 */
export function residentByMapping(smaps: string): Map<string, number> {
  interface Region {
    start: bigint;
    end: bigint;
    perms: string;
    path: string;
    rssKiB: number;
  }
  const regions: Region[] = [];
  for (const line of smaps.split("\n")) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) {
      regions.push({
        start: BigInt(`0x${m[1]}`),
        end: BigInt(`0x${m[2]}`),
        perms: m[3]!,
        path: m[4]!,
        rssKiB: 0,
      });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && regions.length > 0) regions[regions.length - 1]!.rssKiB = Number(rss[1]);
  }
  const out = new Map<string, number>();
  regions.forEach((r, i) => {
    const kib = Number((r.end - r.start) / 1024n);
    const after = regions[i + 1];
    let kind: string;
    if (r.path !== "") kind = r.path.startsWith("/") ? r.path.split("/").pop()! : r.path;
    else if (r.perms.includes("x")) kind = "JIT code (anonymous, executable)";
    else if (
      r.perms === "rw-p" && r.start % (64n << 20n) === 0n && after?.perms === "---p" &&
      after.start === r.end
    ) kind = "malloc arenas of threads";
    else if (r.perms === "rw-p" && kib === 256) kind = "V8 heap pages (256 KiB)";
    else if (r.perms === "rw-p" && kib === 2048) kind = "thread stacks (2 MiB)";
    else kind = `other anonymous (${r.perms})`;
    out.set(kind, (out.get(kind) ?? 0) + r.rssKiB / 1024);
  });
  return out;
}

/** A frame of a sampling heap profile (the inspector's `HeapProfiler.stopSampling`). */
export interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SamplingNode[];
}

/**
 * The bytes a sampling heap profile saw allocated, summed two ways: by the function
 * that allocated (a built-in or the runtime's own code included), and by the outermost
 * frame of the program's own code on its stack — the loop or handler that set the work
 * going (a timer's callback, a stream's reader), which names the subsystem.
 * @param head the profile's root node
 * @param own where a frame of the program's own code is (`lib/agent/kubelet.ts:120`);
 *   undefined for a frame of anything else
 * @returns bytes per allocating function (`name place`; a built-in's place is
 *   `(built-in)`, the runtime's its URL and line) and per outermost frame of the
 *   program's code ("(outside the program)" for stacks with none)
 */
export function allocationsBy(
  head: SamplingNode,
  own: (frame: SamplingNode["callFrame"]) => string | undefined,
): { byFunction: Map<string, number>; byOrigin: Map<string, number> } {
  const byFunction = new Map<string, number>();
  const byOrigin = new Map<string, number>();
  const name = (c: SamplingNode["callFrame"]) => c.functionName || "(anonymous)";
  const bump = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  const walk = (node: SamplingNode, origin: string | undefined) => {
    const c = node.callFrame;
    const place = own(c);
    const here = origin ?? (place === undefined ? undefined : `${name(c)} ${place}`);
    if (node.selfSize > 0) {
      const where = place ?? (c.url === "" ? "(built-in)" : `${c.url}:${c.lineNumber + 1}`);
      bump(byFunction, `${name(c)} ${where}`, node.selfSize);
      bump(byOrigin, here ?? "(outside the program)", node.selfSize);
    }
    for (const child of node.children) walk(child, here);
  };
  walk(head, undefined);
  return { byFunction, byOrigin };
}
