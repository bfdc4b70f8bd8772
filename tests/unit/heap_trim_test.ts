/** The C heap trimmer: its timer, and the glibc call itself. */

import assert from "node:assert/strict";
import { HeapTrimmer } from "../../lib/util/heap_trim.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";

Deno.test("HeapTrimmer trims once per period until stopped", () => {
  const clock = new FakeClock();
  let trims = 0;
  const trimmer = new HeapTrimmer({
    clock,
    logger: silentLogger,
    periodMs: 10_000,
    trim: () => (trims++, true),
  });
  trimmer.start();
  trimmer.start();
  clock.tick(9_999);
  assert.equal(trims, 0);
  clock.tick(1);
  assert.equal(trims, 1);
  clock.tick(20_000);
  assert.equal(trims, 3);
  trimmer.stop();
  clock.tick(60_000);
  assert.equal(trims, 3);
});

Deno.test("trimHeap() gives the C heap's free pages back to the OS", async () => {
  // A child fills malloc with ArrayBuffer backing stores (Deno allocates them
  // there), frees 49 of each 50, and reports its anonymous RSS around the trim.
  const dir = await Deno.makeTempDir({ prefix: "denolet-heap-trim-" });
  try {
    const module = new URL("../../lib/util/heap_trim.ts", import.meta.url).href;
    await Deno.writeTextFile(
      `${dir}/child.ts`,
      `import { trimHeap } from ${JSON.stringify(module)};
const anon = () => Number(/RssAnon:\\s+(\\d+)/.exec(Deno.readTextFileSync("/proc/self/status"))![1]);
let buffers: Uint8Array[] | undefined = [];
for (let i = 0; i < 3000; i++) buffers.push(new Uint8Array(20_000 + (i % 7) * 1_000).fill(1));
const kept = buffers.filter((_, i) => i % 50 === 0);
buffers = undefined;
// Two full collections a task apart: V8 may sweep and free the backing stores of the
// first one on a background thread (slow on a loaded machine).
const gc = (globalThis as unknown as { gc(): void }).gc;
gc();
await new Promise((resolve) => setTimeout(resolve, 0));
gc();
const before = anon();
const released = trimHeap();
console.log(JSON.stringify({ before, after: anon(), released, kept: kept.length }));
`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--v8-flags=--expose-gc", `${dir}/child.ts`],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    const r = JSON.parse(new TextDecoder().decode(out.stdout));
    assert.equal(r.released, true);
    // ~60 MB were freed; at least half of it must leave the process.
    assert.ok(r.before - r.after > 30_000, `RssAnon ${r.before} kB → ${r.after} kB`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
