import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import type { RuntimeService } from "../../lib/cri/types.ts";
import {
  buildSummary,
  PodVolumeStatsCache,
  type PodVolumeUsage,
  StatsProvider,
  type StatsSnapshot,
} from "../../lib/stats/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { emptyDirPath, etcHostsPath, podVolumeDirs, volumeDir } from "../../lib/volumes/mod.ts";
import {
  runtimeContainer,
  runtimePodStatus,
  runtimeSandbox,
  testMachineInfo,
  testPod,
  waitFor,
  withTempDir,
} from "../kit/mod.ts";

const KI = 1024;
const PERIOD = 60_000;

async function writeFile(path: string, bytes: number): Promise<void> {
  await Deno.writeFile(path, new Uint8Array(bytes).fill(7));
}

/** A pod with one volume of each kind the stats tell apart. */
function volumesPod(): Pod {
  return testPod({
    uid: "u1",
    spec: {
      containers: [{ name: "main", image: "busybox" }],
      volumes: [
        { name: "scratch", emptyDir: {} },
        { name: "ram", emptyDir: { medium: "Memory" } },
        { name: "conf", configMap: { name: "c" } },
        { name: "creds", secret: { secretName: "s" } },
        { name: "host", hostPath: { path: "/etc" } },
        { name: "later", emptyDir: {} },
      ],
    },
  });
}

Deno.test("podVolumeDirs() lists the volumes with a pod directory, upstream's local ephemeral ones marked", () => {
  const dirs = podVolumeDirs("/var/lib/kubelet", volumesPod());
  assert.deepEqual(dirs.map((d) => [d.name, d.localEphemeral, d.kubeletWritten]), [
    ["scratch", true, false],
    ["ram", false, false],
    ["conf", true, true],
    ["creds", false, true],
    ["later", true, false],
  ]);
  assert.equal(dirs[0]!.path, "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/scratch");
  assert.equal(dirs[3]!.path, "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~secret/creds");
});

Deno.test("PodVolumeStatsCache measures each pod's volumes on its own timer, not on read", async () => {
  await withTempDir(async (root) => {
    const pod = volumesPod();
    const scratch = emptyDirPath(root, "u1", "scratch");
    const ram = emptyDirPath(root, "u1", "ram");
    const conf = volumeDir(root, "u1", "kubernetes.io~configmap", "conf");
    const creds = volumeDir(root, "u1", "kubernetes.io~secret", "creds");
    for (const d of [scratch, ram, conf, creds]) await Deno.mkdir(d, { recursive: true });
    await writeFile(`${scratch}/data`, 256 * KI);
    await writeFile(`${conf}/key`, 4 * KI);
    const dirBytes = async (d: string) => ((await Deno.lstat(d)).blocks ?? 0) * 512;

    const clock = new FakeClock();
    const cache = new PodVolumeStatsCache({
      clock,
      rootDir: root,
      periodMs: PERIOD,
      random: () => 0.5,
    });
    try {
      cache.update([pod]);
      const first = await waitFor("the first measurement", () => cache.get("u1"), {
        intervalMs: 20,
      });
      const byName = (u: PodVolumeUsage, name: string) =>
        [...u.ephemeral, ...u.persistent].find((v) => v.name === name);
      // Ephemeral: the disk emptyDir and the configMap; the rest reported apart; hostPath
      // and a volume not set up yet are not measured.
      assert.deepEqual(first.ephemeral.map((v) => v.name), ["scratch", "conf"]);
      assert.deepEqual(first.persistent.map((v) => v.name), ["ram", "creds"]);
      const s = byName(first, "scratch")!;
      assert.equal(s.usedBytes, 256 * KI + await dirBytes(scratch));
      assert.equal(s.inodesUsed, 2);
      assert.equal(s.timeMs, clock.now());
      assert.ok(s.capacityBytes > 0 && s.availableBytes > 0 && s.inodes > 0 && s.inodesFree > 0);
      assert.equal(byName(first, "conf")!.usedBytes, 4 * KI + await dirBytes(conf));

      // Writes show only after the next run: one period plus the jitter (here half a period).
      await writeFile(`${scratch}/more`, 512 * KI);
      await writeFile(`${conf}/key2`, 4 * KI);
      clock.tick(PERIOD);
      assert.equal(byName(cache.get("u1")!, "scratch")!.usedBytes, s.usedBytes);
      clock.tick(PERIOD / 2);
      const second = await waitFor(
        "the second measurement",
        () => byName(cache.get("u1")!, "scratch")!,
        { until: (v) => v.usedBytes > s.usedBytes, intervalMs: 20 },
      );
      assert.equal(second.usedBytes, s.usedBytes + 512 * KI);
      assert.equal(second.inodesUsed, 3);
      // A kubelet-written volume is measured once and kept, as upstream's cached metrics.
      assert.equal(byName(cache.get("u1")!, "conf")!.usedBytes, 4 * KI + await dirBytes(conf));

      cache.update([]);
      assert.equal(cache.get("u1"), undefined);
    } finally {
      cache.stop();
    }
  });
});

Deno.test("PodVolumeStatsCache with a period ≤ 0 measures nothing (upstream: collection disabled)", () => {
  const cache = new PodVolumeStatsCache({ clock: new FakeClock(), rootDir: "/", periodMs: 0 });
  cache.update([volumesPod()]);
  assert.equal(cache.get("u1"), undefined);
});

Deno.test("buildSummary() sums the pod's ephemeral storage as upstream: layers, logs, local volumes, hosts file", () => {
  const t = Date.UTC(2026, 0, 1);
  const cgroup = { path: "/" };
  const volume = (name: string, used: number, inodes: number, timeMs = t) => ({
    name,
    timeMs,
    usedBytes: used,
    inodesUsed: inodes,
    capacityBytes: 1000,
    availableBytes: 400,
    inodes: 100,
    inodesFree: 60,
  });
  const snap: StatsSnapshot = {
    timeMs: t,
    node: {
      nodeName: "n",
      startTimeMs: 0,
      cgroup,
      machine: {
        bootTimeMs: 0,
        numCores: 1,
        memoryCapacityBytes: 0,
        bootID: "",
        machineID: "",
        systemUUID: "",
      },
      systemContainers: [],
      fs: {
        timeMs: t,
        capacityBytes: 1000,
        availableBytes: 400,
        usedBytes: 600,
        inodes: 100,
        inodesFree: 60,
        inodesUsed: 40,
      },
    },
    pods: [{
      uid: "u1",
      name: "web",
      namespace: "default",
      startTimeMs: t,
      cgroup,
      containers: [
        {
          id: "a",
          name: "a",
          image: "i",
          startTimeMs: t,
          cgroup,
          rootfs: { timeMs: t, usedBytes: 10, inodesUsed: 1 },
          logs: { timeMs: t + 5000, usedBytes: 20, inodesUsed: 2 },
        },
        {
          id: "b",
          name: "b",
          image: "i",
          startTimeMs: t,
          cgroup,
          rootfs: { timeMs: t, usedBytes: 30, inodesUsed: 3 },
        },
      ],
      volumes: {
        ephemeral: [volume("scratch", 100, 4)],
        persistent: [volume("creds", 1000, 9, t + 9000)],
      },
      podLogs: { timeMs: t, usedBytes: 0, inodesUsed: 0 },
      etcHosts: { timeMs: t, usedBytes: 4096, inodesUsed: 1 },
    }],
  };
  const pod = buildSummary(snap, { onlyCpuAndMemory: false }).pods[0]!;
  // The node filesystem's size; usage 10 + 20 + 30 + 100 + 4096 (the secret not counted).
  assert.deepEqual(pod["ephemeral-storage"], {
    time: "2026-01-01T00:00:05Z",
    availableBytes: 400,
    capacityBytes: 1000,
    usedBytes: 4256,
    inodesFree: 60,
    inodes: 100,
    inodesUsed: 11,
  });
  assert.deepEqual(pod.volume, [
    {
      time: "2026-01-01T00:00:00Z",
      availableBytes: 400,
      capacityBytes: 1000,
      usedBytes: 100,
      inodesFree: 60,
      inodes: 100,
      inodesUsed: 4,
      name: "scratch",
    },
    {
      time: "2026-01-01T00:00:09Z",
      availableBytes: 400,
      capacityBytes: 1000,
      usedBytes: 1000,
      inodesFree: 60,
      inodes: 100,
      inodesUsed: 9,
      name: "creds",
    },
  ]);
  // Only cpu and memory: neither.
  const only = buildSummary(snap, { onlyCpuAndMemory: true }).pods[0]!;
  assert.equal(only["ephemeral-storage"], undefined);
  assert.equal(only.volume, undefined);
});

const CGROUP = new URL("../fixtures/cgroup/hybrid", import.meta.url).pathname;
const PROC = new URL("../fixtures/proc", import.meta.url).pathname;

/** A runtime that answers only the two stats calls the provider makes. */
const fakeRuntime = {
  imageFsInfo: () => Promise.resolve({ imageFilesystems: [], containerFilesystems: [] }),
  listContainerStats: () =>
    Promise.resolve([{
      attributes: { id: "abc", metadata: { name: "app", attempt: 0 }, labels: {}, annotations: {} },
      writableLayer: { timestamp: 0, usedBytes: { value: 8192 }, inodesUsed: { value: 3 } },
    }]),
} as unknown as RuntimeService;

Deno.test("StatsProvider.summary() reports each container's log files and the pod's ephemeral storage", async () => {
  await withTempDir(async (root) => {
    const pod = testPod({
      name: "web",
      namespace: "prod",
      uid: "1234",
      spec: {
        containers: [{ name: "app", image: "busybox", resources: { requests: { cpu: "100m" } } }],
        volumes: [{ name: "scratch", emptyDir: {} }, {
          name: "creds",
          secret: { secretName: "s" },
        }],
      },
    });
    const logDir = `${root}/logs/prod_web_1234/app`;
    await Deno.mkdir(logDir, { recursive: true });
    await writeFile(`${logDir}/0.log`, 8 * KI);
    await writeFile(`${logDir}/0.log.20260101-000000`, 4 * KI);
    const scratch = emptyDirPath(root, "1234", "scratch");
    const creds = volumeDir(root, "1234", "kubernetes.io~secret", "creds");
    await Deno.mkdir(scratch, { recursive: true });
    await Deno.mkdir(creds, { recursive: true });
    await writeFile(`${scratch}/data`, 64 * KI);
    await writeFile(`${creds}/token`, 4 * KI);
    await Deno.writeTextFile(etcHostsPath(root, "1234"), "127.0.0.1\tlocalhost\n");
    const blocks = async (p: string) => ((await Deno.lstat(p)).blocks ?? 0) * 512;

    const clock = new FakeClock();
    const p = new StatsProvider({
      clock,
      cgroupRoot: CGROUP,
      procRoot: PROC,
      rootDir: root,
      podLogsDir: `${root}/logs`,
      runtime: fakeRuntime,
      nodeName: "node-1",
      machine: testMachineInfo(),
      housekeeping: { intervalMs: 10_000, random: () => 0, dynamic: false },
    });
    try {
      p.reconcile([{
        pod,
        runtime: runtimePodStatus({
          uid: "1234",
          name: "web",
          namespace: "prod",
          sandboxes: [runtimeSandbox({ id: "sbx", hostNetwork: true })],
          containers: [
            runtimeContainer({ name: "app", image: "busybox" }, {
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
      clock.tick(0);
      const s = await waitFor("the pod's volumes measured, its writable layer read", async () => {
        const s = await p.summary({ onlyCpuAndMemory: false });
        return s.pods[0]?.volume && s.pods[0].containers[0]?.rootfs ? s : undefined;
      }, { intervalMs: 20 });
      const stats = s.pods[0]!;
      const logs = stats.containers[0]!.logs!;
      assert.equal(logs.usedBytes, 12 * KI);
      assert.equal(logs.inodesUsed, 2);
      assert.ok(logs.capacityBytes! > 0, "the log filesystem's size");
      assert.deepEqual(stats.volume!.map((v) => [v.name, v.usedBytes]), [
        ["scratch", 64 * KI + await blocks(scratch)],
        ["creds", 4 * KI + await blocks(creds)],
      ]);
      const hosts = await blocks(etcHostsPath(root, "1234"));
      const eph = stats["ephemeral-storage"]!;
      // Writable layer + log files + the disk emptyDir + the hosts file; the secret not counted.
      assert.equal(eph.usedBytes, 8192 + 12 * KI + 64 * KI + await blocks(scratch) + hosts);
      assert.equal(eph.inodesUsed, 3 + 2 + 2 + 1);
      assert.ok(eph.capacityBytes! > 0 && eph.availableBytes! > 0, "the node filesystem's size");
    } finally {
      p.stop();
    }
  });
});
