import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import type { ContainerStats, ImageFsInfoResponse, RuntimeService } from "../../lib/cri/types.ts";
import { statsHandlers } from "../../lib/server/mod.ts";
import { PodFilesCache, RuntimeFsCache, StatsProvider } from "../../lib/stats/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { metaTime } from "../../lib/util/time.ts";
import {
  advance,
  flush,
  runtimeContainer,
  runtimePodStatus,
  runtimeSandbox,
  settle,
  testMachineInfo,
  waitFor,
  withTempDir,
} from "../kit/mod.ts";

const CGROUP = new URL("../fixtures/cgroup/hybrid", import.meta.url).pathname;
const PROC = new URL("../fixtures/proc", import.meta.url).pathname;
const PERIOD = 10_000;

/**
 * A runtime that counts every call made to it, whatever the method, and answers the
 * two filesystem reads; `hold` makes them wait until `release()`.
 */
function countingRuntime(opts: { layerTimestampNs?: number } = {}) {
  const calls: string[] = [];
  let held: (() => void)[] | undefined;
  const answer = <T>(value: T): Promise<T> =>
    held ? new Promise((resolve) => held!.push(() => resolve(value))) : Promise.resolve(value);
  const fs: ImageFsInfoResponse = {
    imageFilesystems: [{ timestamp: 0, usedBytes: { value: 4096 }, inodesUsed: { value: 7 } }],
    containerFilesystems: [],
  };
  const layers = (): ContainerStats[] => [{
    attributes: { id: "abc", metadata: { name: "app", attempt: 0 }, labels: {}, annotations: {} },
    writableLayer: {
      timestamp: opts.layerTimestampNs ?? 0,
      usedBytes: { value: 8192 },
      inodesUsed: { value: 3 },
    },
  } as ContainerStats];
  const methods: Record<string, () => Promise<unknown>> = {
    imageFsInfo: () => answer(fs),
    listContainerStats: () => answer(layers()),
  };
  const runtime = new Proxy({}, {
    get(_t, name) {
      if (typeof name !== "string" || name === "then") return undefined;
      return () => {
        calls.push(name);
        const m = methods[name];
        return m ? m() : Promise.reject(new Error(`unexpected runtime call ${name}`));
      };
    },
  }) as RuntimeService;
  return {
    runtime,
    calls,
    count: (name: string) => calls.filter((c) => c === name).length,
    hold: () => (held = []),
    release: () => {
      const waiting = held ?? [];
      held = undefined;
      for (const r of waiting) r();
    },
  };
}

const pod: Pod = {
  metadata: { name: "web", namespace: "prod", uid: "1234" },
  spec: { containers: [{ name: "app", resources: { requests: { cpu: "100m" } } }] },
  status: { startTime: "2026-01-01T00:00:00Z" },
};

function provider(clock: FakeClock, runtime: RuntimeService): StatsProvider {
  const p = new StatsProvider({
    clock,
    cgroupRoot: CGROUP,
    procRoot: PROC,
    rootDir: "/",
    podLogsDir: "/",
    runtime,
    fsStatsPeriodMs: PERIOD,
    nodeName: "node-1",
    machine: testMachineInfo(),
    housekeeping: { intervalMs: 10_000, random: () => 0, dynamic: false },
  });
  p.reconcile([{
    pod,
    runtime: runtimePodStatus({
      uid: "1234",
      name: "web",
      namespace: "prod",
      sandboxes: [runtimeSandbox({ id: "sbx", hostNetwork: true })],
      containers: [
        runtimeContainer({ name: "app", image: "busybox:test" }, {
          id: "abc",
          sandboxId: "sbx",
          state: "running",
          createdAt: 1,
          startedAt: 2,
          imageRef: "sha256:1",
          hash: "1",
        }),
      ],
    }),
  }]);
  return p;
}

Deno.test("StatsProvider serves 20 concurrent Summary and metrics requests without calling the runtime", async () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const rt = countingRuntime();
  const p = provider(clock, rt.runtime);
  try {
    clock.tick(0);
    await flush();
    assert.deepEqual(rt.calls.toSorted(), ["imageFsInfo", "listContainerStats"], "the loop's read");
    rt.calls.length = 0;
    const routes = statsHandlers(p, () => "");
    const url = (path: string) => new URL(`http://node${path}`);
    const responses = await Promise.all([
      ...Array.from({ length: 20 }, () => p.summary({ onlyCpuAndMemory: false })),
      ...Array.from({ length: 5 }, async () => {
        const r = await routes["/stats/summary"]!(
          new Request(url("/stats/summary")),
          url("/stats/summary"),
        );
        return await r.json();
      }),
      ...["/metrics/resource", "/metrics/cadvisor"].map(async (path) => {
        const r = await routes[path]!(new Request(url(path)), url(path));
        return await r.text();
      }),
    ]);
    assert.deepEqual(rt.calls, [], "no runtime call on the request path");
    const s = responses[0] as Awaited<ReturnType<StatsProvider["summary"]>>;
    const c = s.pods[0]!.containers[0]!;
    assert.equal(c.rootfs?.usedBytes, 8192, "the writable layer, from the cache");
    assert.equal(s.node.runtime?.imageFs?.usedBytes, 4096, "the image filesystem, from the cache");
    assert.match(responses.at(-1) as string, /container_cpu_usage_seconds_total/);
  } finally {
    p.stop();
  }
});

Deno.test("RuntimeFsCache reads once per period, and once in all while a read is slow", async () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const rt = countingRuntime();
  const cache = new RuntimeFsCache({ clock, runtime: rt.runtime, periodMs: PERIOD });
  try {
    cache.start();
    await flush();
    assert.equal(rt.count("listContainerStats"), 1, "read right away");
    await advance(clock, 3 * PERIOD);
    assert.equal(rt.count("listContainerStats"), 4, "then one read per period");
    assert.equal(rt.count("imageFsInfo"), 4);

    // A slow runtime: the loop waits for its read, and every other caller joins it.
    rt.hold();
    await advance(clock, PERIOD);
    assert.equal(rt.count("listContainerStats"), 5);
    const joined = [cache.refresh(), cache.refresh(), cache.refresh()];
    await advance(clock, 5 * PERIOD);
    assert.equal(rt.count("listContainerStats"), 5, "no second call while one is in flight");
    assert.equal(rt.count("imageFsInfo"), 5);
    rt.release();
    const figures = await Promise.all(joined);
    assert.ok(figures.every((f) => f === figures[0]), "every caller got the one read");
    await flush();
    assert.equal(rt.count("listContainerStats"), 5, "the next read waits a period after this one");
    await advance(clock, PERIOD);
    assert.equal(rt.count("listContainerStats"), 6);
  } finally {
    cache.stop();
  }
});

Deno.test("RuntimeFsCache backs off when the runtime fails, as cAdvisor's fsHandler", async () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  let calls = 0;
  const runtime = {
    imageFsInfo: () => {
      calls++;
      return Promise.reject(new Error("unavailable"));
    },
    listContainerStats: () => Promise.reject(new Error("unavailable")),
  } as unknown as RuntimeService;
  const cache = new RuntimeFsCache({ clock, runtime, periodMs: PERIOD });
  try {
    cache.start();
    await flush();
    await advance(clock, 2 * PERIOD + 4 * PERIOD); // 20 s, then 40 s
    assert.equal(calls, 3, "reads at 0, +20 s, +60 s");
    assert.deepEqual(cache.latest(), {}, "nothing made up");
  } finally {
    cache.stop();
  }
});

Deno.test("StatsProvider's filesystem figures carry the time they were read, not the request's", async () => {
  const start = Date.UTC(2026, 0, 1);
  const clock = new FakeClock(start);
  // The runtime stamps the writable layer 3 s before the read (containerd's own loop).
  const rt = countingRuntime({ layerTimestampNs: (start - 3_000) * 1e6 });
  const p = provider(clock, rt.runtime);
  try {
    clock.tick(0);
    await flush();
    await advance(clock, 7_000); // a request 7 s after the read, before the next one
    let s = await p.summary({ onlyCpuAndMemory: false });
    assert.equal(
      s.pods[0]!.containers[0]!.rootfs?.time,
      metaTime(start - 3_000),
      "the runtime's stamp",
    );
    assert.equal(s.node.runtime?.imageFs?.time, metaTime(start), "unstamped: the time of the read");
    assert.equal(s.node.fs?.time, metaTime(clock.now()), "statfs is read per request");

    await advance(clock, PERIOD - 7_000); // the next read
    s = await p.summary({ onlyCpuAndMemory: false });
    assert.equal(s.node.runtime?.imageFs?.time, metaTime(start + PERIOD));
    // The runtime has not re-measured the layer: its stamp stays.
    assert.equal(s.pods[0]!.containers[0]!.rootfs?.time, metaTime(start - 3_000));
  } finally {
    p.stop();
  }
});

Deno.test("PodFilesCache measures log and hosts files on its loop, each with its time, not per request", async () => {
  await withTempDir(async (root) => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const logDir = `${root}/prod_web_1234/app`;
    await Deno.mkdir(logDir, { recursive: true });
    await Deno.writeFile(`${logDir}/0.log`, new Uint8Array(8192).fill(7));
    const cache = new PodFilesCache({
      clock,
      rootDir: root,
      podLogsDir: root,
      pods: () => [{ uid: "1234", namespace: "prod", name: "web", containers: ["app"] }],
      periodMs: PERIOD,
    });
    try {
      cache.start();
      const first = await waitFor("the first round", () => cache.get("1234"), { intervalMs: 5 });
      assert.equal(first.containerLogs.get("app")?.bytes, 8192);
      assert.equal(first.containerLogs.get("app")?.timeMs, clock.now());
      assert.equal(first.etcHosts, undefined, "no hosts file: no usage");

      await Deno.writeFile(`${logDir}/1.log`, new Uint8Array(4096).fill(7));
      clock.tick(PERIOD - 1);
      await settle();
      assert.equal(cache.get("1234"), first, "nothing measured between rounds");
      clock.tick(1);
      const second = await waitFor(
        "the next round",
        () => cache.get("1234") !== first ? cache.get("1234") : undefined,
        { intervalMs: 5 },
      );
      assert.equal(second.containerLogs.get("app")?.bytes, 8192 + 4096);
      assert.equal(second.containerLogs.get("app")?.timeMs, Date.UTC(2026, 0, 1) + PERIOD);
    } finally {
      cache.stop();
    }
  });
});
