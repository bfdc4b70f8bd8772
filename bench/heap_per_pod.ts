/**
 * Where an agent's memory goes as pods are added (issue #19): the agent as the
 * side-by-side bench runs it (the bundle of tools/bundle.ts, `deno task run`'s options,
 * `--v=0`, file check 20 s, housekeeping 10 s) on a private containerd, with V8's
 * inspector on loopback. At each pod count (the side-by-side bench's static pods, held
 * steady) after a settle, it reads the process's smaps by kind of mapping and V8's heap
 * spaces, forces a full GC, and takes a heap snapshot. Then it prints, between the first
 * and the last count: resident memory by kind of mapping, the live heap by kind of
 * object, and by top-level retainer (what each top-level object alone keeps alive).
 * With `--allocations=SECONDS`, it then samples what the agent allocates at the last
 * count over that many seconds, garbage included (V8's sampling heap profiler, a sample
 * every 4 KiB), and prints it a minute by the loop or handler that set the work going
 * and by allocating function.
 *
 * ```
 * deno run -A bench/heap_per_pod.ts [--counts=0,110] [--settle=40] [--top=25] [--out=DIR]
 *   [--allocations=60]
 * ```
 * Needs root. The snapshots stay in `--out` (default a temporary directory) for
 * Chrome's DevTools. The inspector costs memory of its own (it shows as other anonymous
 * memory, growing with each snapshot taken), so RSS here reads higher than in the
 * side-by-side bench; read the other kinds, and compare counts within one run.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import { sourceLine } from "../lib/util/bundle_lines.ts";
import { createRuntimeService } from "../lib/cri/mod.ts";
import { startTestRuntime } from "../tests/harness/mod.ts";
import { startAgent } from "../tests/integration/_agent.ts";
import { delay, freePort, waitFor } from "../tests/kit/mod.ts";
import { bundleAgent, bundleLinesIn } from "../tools/bundle.ts";
import {
  allocationsBy,
  parseHeapSnapshot,
  residentByMapping,
  retainedByTopLevel,
  type SamplingNode,
  selfSizeByLabel,
  type Tally,
} from "./_heap_snapshot.ts";
import { writeManifests } from "./_side_by_side.ts";

const MiB = (bytes: number) => (bytes / 1048576).toFixed(2);

/** A Chrome DevTools protocol session on the agent's inspector. */
async function inspect(port: number) {
  const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
  const ws = new WebSocket(targets[0].webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  let id = 0;
  const pending = new Map<number, (msg: { result?: unknown; error?: unknown }) => void>();
  let chunks: string[] = [];
  ws.onmessage = (e) => {
    const msg = JSON.parse(e.data);
    if (msg.method === "HeapProfiler.addHeapSnapshotChunk") chunks.push(msg.params.chunk);
    else if (msg.id !== undefined) pending.get(msg.id)?.(msg);
  };
  const call = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<unknown>((resolve, reject) => {
      const n = ++id;
      pending.set(n, (msg) => {
        pending.delete(n);
        if (msg.error) reject(new Error(`${method}: ${JSON.stringify(msg.error)}`));
        else resolve(msg.result);
      });
      ws.send(JSON.stringify({ id: n, method, params }));
    });
  return {
    /** V8's heap spaces, MiB held / used. */
    async spaces(): Promise<string> {
      const r = await call("Runtime.evaluate", {
        expression: `import("node:v8").then((v8) => JSON.stringify(
          v8.getHeapSpaceStatistics().filter((s) => s.space_size > 0)
            .map((s) => [s.space_name, s.space_size, s.space_used_size])))`,
        awaitPromise: true,
        returnByValue: true,
      }) as { result: { value: string } };
      return (JSON.parse(r.result.value) as [string, number, number][])
        .map(([name, size, used]) => `${name} ${MiB(size)}/${MiB(used)}`).join(", ");
    },
    /** A full GC, then the snapshot's text. */
    async snapshot(): Promise<string> {
      await call("HeapProfiler.enable");
      await call("HeapProfiler.collectGarbage");
      chunks = [];
      await call("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
      const text = chunks.join("");
      chunks = [];
      return text;
    },
    /** What is allocated over `seconds`, garbage included: the sampling profile's root. */
    async allocations(seconds: number): Promise<SamplingNode> {
      await call("HeapProfiler.enable");
      await call("HeapProfiler.startSampling", {
        samplingInterval: 4096,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
      await delay(seconds * 1000);
      const r = await call("HeapProfiler.stopSampling") as { profile: { head: SamplingNode } };
      return r.profile.head;
    },
    close: () => ws.close(),
  };
}

/**
 * Where a frame of the bundle's code is in the sources (`lib/agent/kubelet.ts:120`), by the
 * line table in the bundle's first line (tools/bundle.ts `bundleLinesIn`).
 */
async function bundleFrames(
  program: string,
): Promise<(frame: SamplingNode["callFrame"]) => string | undefined> {
  const table = bundleLinesIn(await Deno.readTextFile(program));
  const url = pathToFileURL(program).href;
  return (frame) => {
    if (frame.url !== url) return undefined;
    const at = sourceLine(table, frame.lineNumber + 1);
    return at && `${at.file.replace(/^(\.\.\/)+/, "")}:${at.line}`;
  };
}

function diffRows(
  a: Map<string, number | Tally>,
  b: Map<string, number | Tally>,
  top: number,
  unit: (v: number) => string,
): string[] {
  const value = (v: number | Tally | undefined) => typeof v === "number" ? v : v?.bytes ?? 0;
  const count = (v: number | Tally | undefined) => typeof v === "object" ? v.count : undefined;
  return [...new Set([...a.keys(), ...b.keys()])]
    .map((k) => ({ k, from: a.get(k), to: b.get(k) }))
    .sort((x, y) => (value(y.to) - value(y.from)) - (value(x.to) - value(x.from)))
    .slice(0, top)
    .map(({ k, from, to }) => {
      const d = value(to) - value(from);
      const n = count(to) !== undefined ? `  ${(count(to)! - (count(from) ?? 0))} more` : "";
      return `  ${unit(value(from)).padStart(8)} → ${unit(value(to)).padStart(8)}  ` +
        `(${d >= 0 ? "+" : ""}${unit(d)})${n}  ${k.slice(0, 100)}`;
    });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      counts: { type: "string", default: "0,110" },
      settle: { type: "string", default: "40" },
      top: { type: "string", default: "25" },
      out: { type: "string" },
      allocations: { type: "string", default: "0" },
    },
  });
  const counts = values.counts.split(",").map(Number);
  if (counts.some((n, i) => !Number.isInteger(n) || n < 0 || (i > 0 && n <= counts[i - 1]!))) {
    throw new Error(`--counts must be ascending pod counts, not ${values.counts}`);
  }
  const top = Number(values.top);
  const out = values.out ?? await Deno.makeTempDir({ prefix: "denolet-heap-" });
  await Deno.mkdir(out, { recursive: true });
  const program = await bundleAgent();
  const rt = await startTestRuntime({ name: "heap-per-pod" });
  const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 300_000 });
  const inspectorPort = freePort();
  const agent = await startAgent({
    runtime: rt,
    program,
    runtimeArgs: [`--inspect=127.0.0.1:${inspectorPort}`],
    extraArgs: ["--v=0", "--file-check-frequency=20s", "--housekeeping-interval=10s"],
  }).catch(async (err) => {
    cri.close();
    await rt.stop();
    throw err;
  });
  const session = await inspect(inspectorPort);
  const taken: { pods: number; mappings: Map<string, number>; snapshot: string }[] = [];
  const allocSeconds = Number(values.allocations);
  let allocated: SamplingNode | undefined;
  try {
    let have = 0;
    for (const n of counts) {
      const names = Array.from({ length: n - have }, (_, i) => `h-${have + i}`);
      await writeManifests(agent.manifestDir, names, rt.images.busybox);
      await waitFor(`${n} containers running`, async () => {
        return (await cri.listContainers({ state: { state: 1 } })).length >= n || undefined;
      }, { timeoutMs: 600_000, intervalMs: 500, log: agent.log });
      have = n;
      await delay(Number(values.settle) * 1000);
      const mappings = residentByMapping(await Deno.readTextFile(`/proc/${agent.pid}/smaps`));
      const rss = [...mappings.values()].reduce((a, b) => a + b, 0);
      console.log(
        `${n} pods: RSS ${rss.toFixed(1)} MiB; V8 spaces (MiB held/used) ` +
          (await session.spaces()),
      );
      const file = `${out}/pods-${n}.heapsnapshot`;
      const snapshot = await session.snapshot();
      await Deno.writeTextFile(file, snapshot);
      console.log(`${n} pods: heap snapshot ${file}`);
      taken.push({ pods: n, mappings, snapshot: file });
    }
    if (allocSeconds > 0) allocated = await session.allocations(allocSeconds);
  } finally {
    session.close();
    await agent.stop();
    cri.close();
    await rt.stop();
    await agent.removeDirs();
  }
  const [first, last] = [taken[0]!, taken.at(-1)!];
  console.log(
    `\nResident memory by mapping, ${first.pods} → ${last.pods} pods (MiB, before a GC):`,
  );
  for (const row of diffRows(first.mappings, last.mappings, top, (v) => v.toFixed(1))) {
    console.log(row);
  }
  const graphs = [first, last].map((t) => parseHeapSnapshot(Deno.readTextFileSync(t.snapshot)));
  const kib = (v: number) => `${(v / 1024).toFixed(0)}K`;
  const [a, b] = graphs.map(selfSizeByLabel);
  const total = (m: Map<string, Tally>) => [...m.values()].reduce((s, t) => s + t.bytes, 0);
  console.log(
    `\nLive heap after a full GC, ${MiB(total(a!))} → ${MiB(total(b!))} MiB, by kind of object:`,
  );
  for (const row of diffRows(a!, b!, top, kib)) console.log(row);
  console.log(`\nBy top-level retainer (what it alone keeps alive):`);
  const [ra, rb] = graphs.map(retainedByTopLevel);
  for (const row of diffRows(ra!, rb!, top, kib)) console.log(row);
  if (allocated) {
    const { byFunction, byOrigin } = allocationsBy(allocated, await bundleFrames(program));
    const perMinute = (bytes: number) => `${MiB(bytes * 60 / allocSeconds).padStart(7)} MiB`;
    const total = [...byOrigin.values()].reduce((s, v) => s + v, 0);
    console.log(
      `\nAllocated at ${last.pods} pods, garbage included: ${perMinute(total)} a minute ` +
        `(sampled over ${allocSeconds} s). By the loop or handler that set the work going:`,
    );
    const rows = (m: Map<string, number>) =>
      [...m].sort((x, y) => y[1] - x[1]).slice(0, top)
        .map(([k, v]) => `  ${perMinute(v)}  ${k.slice(0, 100)}`);
    for (const row of rows(byOrigin)) console.log(row);
    console.log(`\nBy allocating function:`);
    for (const row of rows(byFunction)) console.log(row);
  }
}

if (import.meta.main) await main();
