/**
 * Volume sources denolet has no plugin for (csi, nfs, iscsi, ephemeral,
 * persistentVolumeClaim, image, ...): a pod whose container mounts one does
 * not start, and its FailedMount event is upstream's
 * "Unable to attach or mount volumes: ... no volume plugin matched" with the
 * source named; nothing (no emptyDir) is made in its place.
 */

import assert from "node:assert/strict";
import type { RuntimeService } from "../../lib/cri/types.ts";
import type { EventRecorder } from "../../lib/events/types.ts";
import type { Pod, Volume } from "../../lib/api/types.ts";
import { UPSTREAM_VOLUME_SOURCES } from "../../lib/api/volume_sources.ts";
import { applyPodDefaults, validatePod } from "../../lib/api/mod.ts";
import {
  NoVolumePluginError,
  setUpPodVolumes,
  unsupportedVolumes,
  usedVolumeNames,
} from "../../lib/volumes/mod.ts";
import { runtimePodStatus, testPod, unitRuntimeManager, withTempDir } from "../kit/mod.ts";

/** A pod "ns/p" whose one container mounts each of `volumes`. */
function mountingPod(volumes: Volume[]): Pod {
  return testPod({
    name: "p",
    namespace: "ns",
    uid: "uid-1",
    containers: [{
      name: "app",
      image: "busybox",
      volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: `/mnt/${v.name}` })),
    }],
    spec: { volumes },
  });
}

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

Deno.test("setUpPodVolumes() refuses every source without a plugin, naming volume and source, and sets nothing up", async () => {
  await withTempDir(async (root) => {
    const refused: Volume[] = [
      { name: "inline-csi", csi: { driver: "example.com/x" } },
      { name: "share", nfs: { server: "10.0.0.1", path: "/export" } },
      { name: "lun", iscsi: { targetPortal: "10.0.0.2:3260", iqn: "iqn.x", lun: 0 } },
      { name: "scratch-claim", ephemeral: { volumeClaimTemplate: { spec: {} } } },
      { name: "claim", persistentVolumeClaim: { claimName: "c" } },
      { name: "img", image: { reference: "busybox" } },
    ] as unknown as Volume[];
    const pod = mountingPod([{ name: "tmp", emptyDir: {} }, ...refused]);
    await assert.rejects(setUpPodVolumes(pod, { rootDir: root }), (err: unknown) => {
      assert.ok(err instanceof NoVolumePluginError);
      assert.equal(err.pod, "ns/p");
      assert.deepEqual(err.volumes, [
        { name: "inline-csi", source: "csi" },
        { name: "share", source: "nfs" },
        { name: "lun", source: "iscsi" },
        { name: "scratch-claim", source: "ephemeral" },
        { name: "claim", source: "persistentVolumeClaim" },
        { name: "img", source: "image" },
      ]);
      assert.match(
        err.message,
        /^pod "ns\/p": failed to get Plugin from volumeSpec for volume "inline-csi" err=no volume plugin matched \(denolet does not implement csi volumes\); failed to get Plugin from volumeSpec for volume "share" err=no volume plugin matched \(denolet does not implement nfs volumes\);/,
      );
      return true;
    });
    // Not even the emptyDir beside them: the pod never gets a directory to run on.
    assert.equal(await exists(`${root}/pods/uid-1`), false);
  });
});

Deno.test("setUpPodVolumes() skips a source without a plugin that no container mounts, as upstream", async () => {
  await withTempDir(async (root) => {
    const pod = mountingPod([{ name: "tmp", emptyDir: {} }]);
    pod.spec.volumes!.push(
      { name: "unused", nfs: { server: "s", path: "/" } } as unknown as Volume,
    );
    const paths = await setUpPodVolumes(pod, { rootDir: root });
    assert.deepEqual([...paths.keys()], ["tmp"]);
    assert.equal(await exists(`${root}/pods/uid-1/volumes/kubernetes.io~empty-dir/unused`), false);
  });
});

Deno.test("usedVolumeNames() counts init, app and ephemeral containers' mounts and block devices", () => {
  const pod = testPod({
    containers: [{ name: "app", volumeMounts: [{ name: "a", mountPath: "/a" }] }],
    spec: {
      initContainers: [{ name: "init", volumeMounts: [{ name: "b", mountPath: "/b" }] }],
      ephemeralContainers: [{ name: "dbg", volumeMounts: [{ name: "c", mountPath: "/c" }] }],
    },
  });
  pod.spec.containers[0]!.volumeDevices = [{ name: "d", devicePath: "/dev/xvdd" }];
  assert.deepEqual([...usedVolumeNames(pod)].sort(), ["a", "b", "c", "d"]);
  pod.spec.volumes = [
    { name: "a", emptyDir: {} },
    { name: "d", persistentVolumeClaim: { claimName: "block" } },
  ];
  assert.deepEqual(unsupportedVolumes(pod), [{ name: "d", source: "persistentVolumeClaim" }]);
});

/** A CRI runtime any call to which fails the test, and the calls it saw. */
function untouchableRuntime(): { runtime: RuntimeService; calls: string[] } {
  const calls: string[] = [];
  const runtime = new Proxy({}, {
    get: (_t, name) => (..._args: unknown[]) => {
      calls.push(String(name));
      return Promise.reject(new Error(`unexpected CRI call ${String(name)}`));
    },
  }) as RuntimeService;
  return { runtime, calls };
}

type RecordedEvent = { reason: string; type: string; message: string; kind?: string };

/** Syncs `pod` (no sandbox yet) once; returns the result, the events and the CRI calls. */
async function syncOnce(root: string, pod: Pod) {
  const { runtime, calls } = untouchableRuntime();
  const events: RecordedEvent[] = [];
  const recorder: EventRecorder = {
    event: (obj, type, reason, message) =>
      events.push({ type, reason, message, ...(obj.kind ? { kind: obj.kind } : {}) }),
  };
  const manager = unitRuntimeManager(runtime, { rootDir: root, events: recorder });
  const result = await manager.syncPod(
    pod,
    runtimePodStatus({ uid: "uid-1", name: "p", namespace: "ns", sandboxes: [], containers: [] }),
    new AbortController().signal,
  );
  return { result, events, calls };
}

Deno.test("syncPod() stops before the sandbox with upstream's FailedMount event for a volume without a plugin", async () => {
  await withTempDir(async (root) => {
    const pod = mountingPod([
      { name: "data", nfs: { server: "10.0.0.1", path: "/export" } },
      { name: "cache", csi: { driver: "example.com/x" } },
    ] as unknown as Volume[]);
    const { result, events, calls } = await syncOnce(root, pod);
    assert.deepEqual(calls, []);
    assert.deepEqual(result.steps.map((s) => [s.action, s.error?.reason]), [
      ["MountVolume", "FailedMount"],
    ]);
    // No per-container error: the containers stay Waiting ContainerCreating, as upstream.
    assert.equal(result.lastErrors.size, 0);
    assert.deepEqual(events, [{
      type: "Warning",
      reason: "FailedMount",
      kind: "Pod",
      message: "Unable to attach or mount volumes: unmounted volumes=[cache data], " +
        "unattached volumes=[], failed to process volumes=[cache data]: " +
        'failed to get Plugin from volumeSpec for volume "data" err=no volume plugin matched ' +
        "(denolet does not implement nfs volumes); " +
        'failed to get Plugin from volumeSpec for volume "cache" err=no volume plugin matched ' +
        "(denolet does not implement csi volumes)",
    }]);
  });
});

Deno.test("syncPod() words a plugin's SetUp failure as upstream's reconciler does", async () => {
  await withTempDir(async (root) => {
    // Standalone: a configMap volume cannot be read.
    const pod = mountingPod([{ name: "cfg", configMap: { name: "x" } }]);
    const { events, calls } = await syncOnce(root, pod);
    assert.deepEqual(calls, []);
    assert.deepEqual(events, [{
      type: "Warning",
      reason: "FailedMount",
      kind: "Pod",
      message: 'MountVolume.SetUp failed for volume "cfg" : configmap "x" cannot be read: ' +
        "no apiserver (standalone mode)",
    }]);
  });
});

Deno.test("validatePod() accepts every upstream volume source and rejects a key upstream does not know", () => {
  const pod = (volume: Record<string, unknown>) =>
    applyPodDefaults(testPod({ spec: { volumes: [volume as unknown as Volume] } }));
  for (const source of UPSTREAM_VOLUME_SOURCES) {
    const spec = source === "hostPath" ? { path: "/tmp" } : {};
    assert.deepEqual(validatePod(pod({ name: "v", [source]: spec })), [], source);
  }
  const errs = validatePod(pod({ name: "v", nfsv4: {} }));
  assert.equal(errs.length, 1);
  assert.match(
    errs[0]!,
    /^spec\.volumes\[0\]: Unsupported value: "nfsv4": supported values: "emptyDir", /,
  );
});
