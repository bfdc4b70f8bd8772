/**
 * The CRI proxy's own parts: the HTTP/2 frame scanner and the fault decision (pure), and
 * the proxy moving, holding and cutting bytes between two unix sockets of the test's own.
 */

import assert from "node:assert/strict";
import {
  CLIENT_PREFACE,
  decide,
  type FaultMode,
  faultSchedule,
  type FrameHeader,
  FrameScanner,
  FrameType,
  MAX_STALL_MS,
  startCriProxy,
} from "./_cri_proxy.ts";
import { seededRandom } from "../kit/suite.ts";
import { withTempDir } from "../kit/mod.ts";
import { concatBytes } from "../../lib/util/bytes.ts";

function frame(type: number, streamId: number, payload: number, flags = 0): Uint8Array {
  const b = new Uint8Array(9 + payload);
  b[0] = (payload >> 16) & 0xff;
  b[1] = (payload >> 8) & 0xff;
  b[2] = payload & 0xff;
  b[3] = type;
  b[4] = flags;
  new DataView(b.buffer).setUint32(5, streamId);
  b.fill(0xaa, 9);
  return b;
}

const clientBytes = concatBytes([
  new TextEncoder().encode(CLIENT_PREFACE),
  frame(FrameType.SETTINGS, 0, 18),
  frame(FrameType.HEADERS, 1, 40, 4),
  frame(FrameType.DATA, 1, 300, 1),
  frame(FrameType.HEADERS, 3, 0x1_0203, 4),
  frame(FrameType.RST_STREAM, 3, 4),
]);
const expected: FrameHeader[] = [
  { length: 18, type: FrameType.SETTINGS, flags: 0, streamId: 0 },
  { length: 40, type: FrameType.HEADERS, flags: 4, streamId: 1 },
  { length: 300, type: FrameType.DATA, flags: 1, streamId: 1 },
  { length: 0x1_0203, type: FrameType.HEADERS, flags: 4, streamId: 3 },
  { length: 4, type: FrameType.RST_STREAM, flags: 0, streamId: 3 },
];

Deno.test("FrameScanner reads the frame headers after the client preface in one chunk", () => {
  assert.deepEqual(new FrameScanner({ client: true }).push(clientBytes), expected);
});

Deno.test("FrameScanner finds the same frames whatever the chunks' boundaries", () => {
  const random = seededRandom(7);
  for (let run = 0; run < 50; run++) {
    const scanner = new FrameScanner({ client: true });
    const seen: FrameHeader[] = [];
    for (let i = 0; i < clientBytes.length;) {
      const n = 1 + Math.floor(random() * 20);
      seen.push(...scanner.push(clientBytes.subarray(i, i + n)));
      i += n;
    }
    assert.deepEqual(seen, expected, `run ${run}`);
  }
});

Deno.test("FrameScanner on the runtime's side expects no preface", () => {
  const bytes = concatBytes([frame(FrameType.SETTINGS, 0, 0), frame(FrameType.HEADERS, 1, 5)]);
  assert.deepEqual(new FrameScanner({ client: false }).push(bytes).map((f) => f.type), [
    FrameType.SETTINGS,
    FrameType.HEADERS,
  ]);
});

Deno.test("decide() passes everything in pass mode without drawing", () => {
  const random = () => assert.fail("drew a number in pass mode");
  assert.deepEqual(decide({ kind: "pass" }, { fromAgent: true, newCalls: 3 }, random), {
    kind: "forward",
    delayMs: 0,
  });
});

Deno.test("decide() delays chunks of both directions within the mode's bounds", () => {
  const random = seededRandom(1);
  const mode: FaultMode = { kind: "delay", minMs: 20, maxMs: 80 };
  const delays = Array.from({ length: 200 }, (_, i) => {
    const a = decide(mode, { fromAgent: i % 2 === 0, newCalls: 0 }, random);
    assert.equal(a.kind, "forward");
    return a.kind === "forward" ? a.delayMs : -1;
  });
  assert.ok(delays.every((d) => d >= 20 && d <= 80), String(delays));
  assert.ok(new Set(delays).size > 20, "delays vary");
});

Deno.test("decide() stalls or resets only chunks of the agent's that open calls", () => {
  const always = () => 0;
  for (
    const mode of [
      { kind: "stall", probability: 1, ms: 5000 },
      { kind: "reset", probability: 1 },
    ] satisfies FaultMode[]
  ) {
    assert.deepEqual(decide(mode, { fromAgent: false, newCalls: 1 }, always), {
      kind: "forward",
      delayMs: 0,
    });
    assert.deepEqual(decide(mode, { fromAgent: true, newCalls: 0 }, always), {
      kind: "forward",
      delayMs: 0,
    });
  }
  assert.deepEqual(
    decide({ kind: "stall", probability: 1, ms: 5000 }, { fromAgent: true, newCalls: 1 }, always),
    { kind: "stall", ms: 5000 },
  );
  assert.equal(
    decide({ kind: "reset", probability: 1 }, { fromAgent: true, newCalls: 1 }, always).kind,
    "reset",
  );
});

Deno.test("decide() hits calls at about the mode's probability, the same for the same seed", () => {
  const run = (seed: number) => {
    const random = seededRandom(seed);
    return Array.from(
      { length: 2000 },
      () => decide({ kind: "reset", probability: 0.1 }, { fromAgent: true, newCalls: 1 }, random),
    );
  };
  const a = run(42);
  assert.deepEqual(a, run(42));
  const resets = a.filter((x) => x.kind === "reset");
  assert.ok(resets.length > 150 && resets.length < 250, `${resets.length} resets of 2000`);
  assert.ok(resets.some((x) => x.kind === "reset" && x.forwardFirst));
  assert.ok(resets.some((x) => x.kind === "reset" && !x.forwardFirst));
});

/** An upstream that echoes every byte back, and a client connected through the proxy. */
async function throughProxy(
  dir: string,
  fn: (proxy: Awaited<ReturnType<typeof startCriProxy>>, client: Deno.UnixConn) => Promise<void>,
) {
  const upstream = Deno.listen({ transport: "unix", path: `${dir}/up.sock` });
  const echoes: Promise<void>[] = [];
  const serving = (async () => {
    for await (const conn of upstream) {
      echoes.push(conn.readable.pipeTo(conn.writable).catch(() => {}));
    }
  })();
  const proxy = await startCriProxy({
    path: `${dir}/proxy.sock`,
    upstream: `unix://${dir}/up.sock`,
    random: seededRandom(1),
  });
  const client = await Deno.connect({ transport: "unix", path: `${dir}/proxy.sock` });
  try {
    await fn(proxy, client);
  } finally {
    try {
      client.close();
    } catch {
      // closed by the test
    }
    await proxy.close();
    upstream.close();
    await serving;
    await Promise.all(echoes);
  }
}

async function readExactly(conn: Deno.Conn, n: number): Promise<Uint8Array | null> {
  const out = new Uint8Array(n);
  let off = 0;
  while (off < n) {
    const got = await conn.read(out.subarray(off));
    if (got === null) return null;
    off += got;
  }
  return out;
}

Deno.test("the proxy forwards bytes both ways, counts calls, holds a stalled connection and cuts a reset one", async () => {
  await withTempDir(async (dir) => {
    await throughProxy(dir, async (proxy, client) => {
      const hello = concatBytes([
        new TextEncoder().encode(CLIENT_PREFACE),
        frame(FrameType.HEADERS, 1, 3),
      ]);
      await client.write(hello);
      assert.deepEqual(await readExactly(client, hello.length), hello);
      assert.equal(proxy.counts().calls, 1);

      assert.equal(proxy.stall(300), 1);
      const started = performance.now();
      await client.write(frame(FrameType.DATA, 1, 10));
      await readExactly(client, 19);
      assert.ok(performance.now() - started >= 290, "the stalled bytes waited");

      assert.equal(proxy.resetAll(), 1);
      const after = await client.read(new Uint8Array(10)).catch(() => null);
      assert.equal(after, null, "the reset connection is closed");
      assert.deepEqual(
        { ...proxy.counts() },
        { connections: 1, calls: 1, delayed: 0, stalls: 1, resets: 1 },
      );
    });
  }, "denolet-cri-proxy-");
});

Deno.test("faultSchedule() fills the run with every kind of fault, no stall longer than one slow call, the same for the same seed", () => {
  for (let seed = 1; seed <= 50; seed++) {
    const steps = faultSchedule(seededRandom(seed), 25_000);
    assert.deepEqual(steps, faultSchedule(seededRandom(seed), 25_000), `seed ${seed}`);
    const held = steps.reduce((ms, s) => ms + (s.kind === "mode" ? s.forMs : 0), 0);
    assert.ok(held >= 25_000 && held < 25_000 + 2_500 + 6_000, `seed ${seed}: ${held} ms`);
    const kinds = new Set(steps.map((s) => s.kind === "mode" ? s.mode.kind : s.kind));
    assert.deepEqual([...kinds].sort(), ["delay", "pass", "reset", "resetAll", "stall"]);
    for (const s of steps) {
      const stallMs = s.kind === "stall"
        ? s.ms
        : s.kind === "mode" && s.mode.kind === "stall"
        ? s.mode.ms
        : 0;
      assert.ok(stallMs <= MAX_STALL_MS, `seed ${seed}: a ${stallMs} ms stall`);
    }
  }
});
