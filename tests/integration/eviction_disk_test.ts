/**
 * Disk pressure and local storage limits on a real containerd, wired as the
 * agent wires the kubelet and its eviction manager (./_eviction.ts): the
 * kubelet's root dir and containerd's root share one small tmpfs the harness
 * mounts (`rootSizeBytes`) and removes, as /var/lib/kubelet and
 * /var/lib/containerd share a node's root filesystem (so the image filesystem
 * is not dedicated: nodefs pressure reclaims dead containers and images first,
 * and writable layers count against a container's ephemeral-storage limit).
 *
 * - a pod that ended, still known, loses its volumes (emptyDir removed, a
 *   memory-backed one's tmpfs unmounted) but keeps its pod dir;
 * - a pod filling an emptyDir past `evictionHard: nodefs.available` is evicted
 *   after node-level reclaim ran, its emptyDir freed, DiskPressure True then False;
 * - an emptyDir over its `sizeLimit`, and a container over its
 *   `ephemeral-storage` limit, evict their pods with upstream's messages.
 *
 * Pods are apiserver pods: a static pod is critical and never evicted.
 */

import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { emptyDirPath, hostMounter, podDir } from "../../lib/volumes/mod.ts";
import { startTestRuntime, type TestRuntime } from "../harness/mod.ts";
import { hostNetworkPod, waitFor } from "../kit/mod.ts";
import { type EvictionRig, startEvictionRig } from "./_eviction.ts";

const MiB = 2 ** 20;
/** The tmpfs holding the kubelet's root dir and containerd's root. */
const FS_BYTES = 96 * MiB;

/** A runtime and a kubelet whose root dirs share a {@link FS_BYTES} tmpfs; volumes walked every second. */
async function withDiskRig(name: string, fn: (rig: EvictionRig) => Promise<void>): Promise<void> {
  const rt: TestRuntime = await startTestRuntime({ name, rootSizeBytes: FS_BYTES });
  let rig: EvictionRig | undefined;
  try {
    const rootDir = `${rt.root}/kubelet`;
    await Deno.mkdir(rootDir, { recursive: true });
    rig = await startEvictionRig(rt, { rootDir, volumeStatsAggPeriodMs: 1000 });
    await fn(rig);
  } finally {
    await rig?.stop();
    await rt.stop();
  }
}

/** A busybox pod of one container running `script` with an emptyDir "scratch" at /scratch. */
function scratchPod(
  rig: EvictionRig,
  name: string,
  script: string,
  opts: { sizeLimit?: string; restartPolicy?: "Never" } = {},
): Pod {
  return hostNetworkPod(rig.images.busybox, {
    name,
    spec: {
      volumes: [{
        name: "scratch",
        emptyDir: opts.sizeLimit !== undefined ? { sizeLimit: opts.sizeLimit } : {},
      }],
      ...(opts.restartPolicy ? { restartPolicy: opts.restartPolicy } : {}),
    },
    containers: [{
      name: "main",
      command: ["sh", "-c", script],
      volumeMounts: [{ name: "scratch", mountPath: "/scratch" }],
    }],
  });
}

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

/** Mount points at or below `dir` (resolved as mountinfo holds them). */
async function mountsUnder(dir: string): Promise<string[]> {
  const real = await Deno.realPath(dir);
  return (await hostMounter.mounts()).map((m) => m.mountPoint).filter((p) =>
    p === real || p.startsWith(`${real}/`)
  );
}

/** Waits for the pod's phase, returning its status. */
function phase(rig: EvictionRig, pod: Pod, want: string, timeoutMs = 60_000) {
  return waitFor(`${pod.metadata.name} ${want}`, () => {
    const s = rig.status(pod);
    return s?.phase === want ? s : undefined;
  }, { timeoutMs });
}

Deno.test({
  name:
    "a pod that ended, still known, has its emptyDir removed and its memory emptyDir's tmpfs unmounted; its pod dir stays",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withDiskRig("ended-volumes", async (rig) => {
      const pod = hostNetworkPod(rig.images.busybox, {
        name: "ended",
        spec: {
          restartPolicy: "Never",
          volumes: [{ name: "scratch", emptyDir: {} }, {
            name: "ram",
            emptyDir: { medium: "Memory", sizeLimit: "4Mi" },
          }],
        },
        containers: [{
          name: "main",
          // Writes into both, then waits for the test's go-ahead and exits 0.
          command: [
            "sh",
            "-c",
            "echo a > /scratch/a && echo b > /ram/b && until [ -e /scratch/go ]; do sleep 1; done",
          ],
          volumeMounts: [
            { name: "scratch", mountPath: "/scratch" },
            { name: "ram", mountPath: "/ram" },
          ],
        }],
      });
      rig.add(pod);
      const uid = pod.metadata.uid!;
      const scratch = emptyDirPath(rig.rootDir, uid, "scratch");
      const ram = emptyDirPath(rig.rootDir, uid, "ram");
      await waitFor(
        "both volumes written",
        async () => (await exists(`${scratch}/a`)) && (await exists(`${ram}/b`)) || undefined,
        {
          timeoutMs: 30_000,
        },
      );
      assert.deepEqual(await mountsUnder(podDir(rig.rootDir, uid)), [await Deno.realPath(ram)]);
      await Deno.writeTextFile(`${scratch}/go`, "");

      await phase(rig, pod, "Succeeded");
      await waitFor(
        "the volumes torn down",
        async () => !(await exists(scratch)) && !(await exists(ram)) || undefined,
        { timeoutMs: 30_000 },
      );
      assert.deepEqual(await mountsUnder(podDir(rig.rootDir, uid)), []);
      // The pod is still known, with its exited container and its pod dir.
      assert.ok(rig.kubelet.podManager.get(uid));
      assert.equal(rig.kubelet.podWorkers.podState(uid), "terminated");
      const runtime = await rig.manager.getPodStatus(uid);
      assert.deepEqual(runtime.containers.map((c) => [c.name, c.state, c.exitCode]), [
        ["main", "exited", 0],
      ]);
      assert.ok(await exists(`${podDir(rig.rootDir, uid)}/volumes`));
    });
  },
});

Deno.test({
  name:
    "a pod filling an emptyDir past evictionHard nodefs.available is evicted after node-level reclaim; its emptyDir is freed and DiskPressure comes and goes",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withDiskRig("evict-nodefs", async (rig) => {
      // A finished pod: its dead container is what node-level reclaim can remove.
      const done = scratchPod(rig, "done", "echo done", { restartPolicy: "Never" });
      rig.add(done);
      const steady = scratchPod(rig, "steady", "sleep 3600");
      rig.add(steady);
      await phase(rig, done, "Succeeded");
      await phase(rig, steady, "Running");
      await waitFor(
        "the finished pod terminated",
        () => rig.kubelet.podWorkers.podState(done.metadata.uid!) === "terminated" || undefined,
      );
      assert.equal((await rig.manager.getPodStatus(done.metadata.uid!)).containers.length, 1);

      const available = async () => {
        const s = await rig.stats.summary({ onlyCpuAndMemory: false });
        const bytes = s.node.fs?.availableBytes;
        assert.ok(bytes !== undefined, "the Summary reports nodefs");
        return bytes;
      };
      // Crossed once the writer has written 12 of its 24 MiB.
      const thresholdMi = Math.floor((await available()) / MiB) - 12;
      assert.ok(thresholdMi > 24, `only ${thresholdMi + 12} MiB available on the test's tmpfs`);
      const eviction = rig.startEviction([
        `--eviction-hard=nodefs.available<${thresholdMi}Mi,imagefs.available<1Mi,memory.available<1Mi`,
        "--eviction-pressure-transition-period=5s",
      ]);
      const writer = scratchPod(
        rig,
        "writer",
        "dd if=/dev/zero of=/scratch/blob bs=1M count=24 && sleep 3600",
      );
      rig.add(writer);
      const evicted = await phase(rig, writer, "Failed", 90_000);
      assert.equal(evicted.reason, "Evicted");
      assert.match(
        evicted.message ?? "",
        new RegExp(
          `^The node was low on resource: ephemeral-storage\\. Threshold quantity: ${thresholdMi}Mi, available: \\d+(Ki|Mi)?\\. `,
        ),
      );
      assert.ok(eviction.isUnderDiskPressure(), "DiskPressure while the writer was evicted");
      // Node-level reclaim ran first: the event, and the finished pod's dead container is gone.
      const nodeEvents = rig.events.got.filter((e) => e.ref.kind === "Node");
      assert.ok(
        nodeEvents.some((e) =>
          e.reason === "EvictionThresholdMet" &&
          e.message === "Attempting to reclaim ephemeral-storage"
        ),
        JSON.stringify(nodeEvents),
      );
      assert.deepEqual((await rig.manager.getPodStatus(done.metadata.uid!)).containers, []);
      assert.deepEqual(
        rig.events.got.filter((e) => e.reason === "Evicted").map((e) => e.ref.name),
        ["writer"],
      );
      // Its emptyDir is removed while the pod is still known, and the space is back.
      const blob = emptyDirPath(rig.rootDir, writer.metadata.uid!, "scratch");
      await waitFor(
        "the writer's emptyDir removed",
        async () => !(await exists(blob)) || undefined,
        {
          timeoutMs: 30_000,
        },
      );
      assert.ok(rig.kubelet.podManager.get(writer.metadata.uid!));
      assert.ok((await available()) > (thresholdMi + 8) * MiB);
      await waitFor("DiskPressure gone", () => !eviction.isUnderDiskPressure() || undefined, {
        timeoutMs: 60_000,
      });
      assert.equal(rig.status(steady)?.phase, "Running", "the small pod was not evicted");
    });
  },
});

Deno.test({
  name: "an emptyDir over its sizeLimit evicts its pod with upstream's message",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withDiskRig("evict-sizelimit", async (rig) => {
      rig.startEviction([]);
      const pod = scratchPod(
        rig,
        "sized",
        "dd if=/dev/zero of=/scratch/blob bs=1M count=6 && sleep 3600",
        { sizeLimit: "4Mi" },
      );
      rig.add(pod);
      const evicted = await phase(rig, pod, "Failed", 60_000);
      assert.equal(evicted.reason, "Evicted");
      assert.equal(evicted.message, 'Usage of EmptyDir volume "scratch" exceeds the limit "4Mi". ');
      await waitFor(
        "the emptyDir removed",
        async () =>
          !(await exists(emptyDirPath(rig.rootDir, pod.metadata.uid!, "scratch"))) || undefined,
        { timeoutMs: 30_000 },
      );
    });
  },
});

Deno.test({
  name: "with localStorageCapacityIsolation false an emptyDir over its sizeLimit is not evicted",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withDiskRig("no-isolation", async (rig) => {
      const eviction = rig.createEviction(["--local-storage-capacity-isolation=false"]);
      const pod = scratchPod(
        rig,
        "sized",
        "dd if=/dev/zero of=/scratch/blob bs=1M count=6 && sleep 3600",
        { sizeLimit: "4Mi" },
      );
      rig.add(pod);
      await phase(rig, pod, "Running");
      await waitFor("the emptyDir over its limit in the Summary", async () => {
        const s = await rig.stats.summary({ onlyCpuAndMemory: false });
        const p = s.pods.find((p) => p.podRef.uid === pod.metadata.uid);
        const used = p?.volume?.find((v) => v.name === "scratch")?.usedBytes ?? 0;
        return used > 4 * MiB || undefined;
      }, { timeoutMs: 30_000 });
      // The round that evicts this pod with isolation on (the test above) evicts nothing.
      assert.equal(await eviction.synchronize(), undefined);
      assert.equal(rig.status(pod)?.phase, "Running");
      assert.deepEqual(rig.events.got.filter((e) => e.reason === "Evicted"), []);
    });
  },
});

Deno.test({
  name:
    "a container writing past its ephemeral-storage limit into its writable layer evicts its pod with upstream's message",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withDiskRig("evict-ephemeral", async (rig) => {
      rig.startEviction([]);
      const pod = hostNetworkPod(rig.images.busybox, {
        name: "layered",
        containers: [
          {
            name: "writer",
            command: ["sh", "-c", "dd if=/dev/zero of=/blob bs=1M count=6 && sleep 3600"],
            resources: { limits: { "ephemeral-storage": "4Mi" } },
          },
          // The pod's total limit (68Mi) is not what is broken: the writer's own is.
          {
            name: "idle",
            command: ["sleep", "3600"],
            resources: { limits: { "ephemeral-storage": "64Mi" } },
          },
        ],
      });
      rig.add(pod);
      const evicted = await phase(rig, pod, "Failed", 60_000);
      assert.equal(evicted.reason, "Evicted");
      assert.equal(
        evicted.message,
        'Container writer exceeded its local ephemeral storage limit "4Mi". ',
      );
    });
  },
});
