import assert from "node:assert/strict";
import type { Pod, PodStatus } from "../../lib/api/types.ts";
import {
  ApiError,
  type CallOptions,
  type DeleteOptions,
  type KubeClient,
  type ObjectList,
  type PatchType,
} from "../../lib/kubeapi/types.ts";
import {
  type ApiPodRef,
  ApiStatusWriter,
  podStatusPatch,
  StatusManager,
} from "../../lib/status/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { applyStrategicMergePatch, type JsonObject, testPod } from "../kit/mod.ts";

// ---------------------------------------------------------------------------
// An in-memory apiserver for pods: resourceVersions, uid preconditions, a
// strategic-merge applier for pod status, injected conflicts and an outage switch.

interface Call {
  method: string;
  path: string;
  body?: unknown;
}

const MERGE_KEYS: Record<string, string> = { conditions: "type", podIPs: "ip", hostIPs: "ip" };

class FakePods implements KubeClient {
  pods = new Map<string, Pod>();
  calls: Call[] = [];
  down = false;
  conflictsOnPatch = 0;
  #rv = 1;

  add(pod: Pod): Pod {
    const stored = structuredClone(pod);
    stored.metadata.resourceVersion = String(++this.#rv);
    this.pods.set(`/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`, stored);
    return stored;
  }

  stored(ns: string, name: string): Pod | undefined {
    return this.pods.get(`/api/v1/namespaces/${ns}/pods/${name}`);
  }

  /** Edits a stored pod as another client would (bumps the resourceVersion). */
  edit(ns: string, name: string, fn: (pod: Pod) => void): void {
    const pod = this.stored(ns, name)!;
    fn(pod);
    pod.metadata.resourceVersion = String(++this.#rv);
  }

  #check(method: string, path: string, body?: unknown): void {
    this.calls.push(body === undefined ? { method, path } : { method, path, body });
    if (this.down) {
      throw new Error(`${method} ${path}: connect ECONNREFUSED 127.0.0.1:6443`);
    }
  }

  #find(path: string): Pod {
    const pod = this.pods.get(path);
    if (!pod) throw new ApiError(`pods "${path}" not found`, 404, "NotFound");
    return pod;
  }

  get<T>(path: string): Promise<T> {
    return Promise.resolve().then(() => {
      this.#check("GET", path);
      return structuredClone(this.#find(path)) as T;
    });
  }
  list<T>(): Promise<ObjectList<T>> {
    return Promise.reject(new Error("not used"));
  }
  create<T>(): Promise<T> {
    return Promise.reject(new Error("not used"));
  }
  update<T>(): Promise<T> {
    return Promise.reject(new Error("not used"));
  }
  patch<T>(path: string, body: unknown, type: PatchType, _opts?: CallOptions): Promise<T> {
    return Promise.resolve().then(() => {
      this.#check("PATCH", path, body);
      assert.equal(type, "strategic");
      const podPathOnly = path.replace(/\/status$/, "");
      const pod = this.#find(podPathOnly);
      const patch = body as JsonObject;
      const uid = (patch.metadata as JsonObject | undefined)?.uid;
      if (uid !== undefined && uid !== pod.metadata.uid) {
        throw new ApiError("Precondition failed: UID in precondition", 409, "Conflict");
      }
      if (this.conflictsOnPatch > 0) {
        this.conflictsOnPatch--;
        throw new ApiError("the object has been modified", 409, "Conflict");
      }
      const status = applyStrategicMergePatch(
        (pod.status ?? {}) as JsonObject,
        (patch.status ?? {}) as JsonObject,
        MERGE_KEYS,
      );
      pod.status = status as PodStatus;
      pod.metadata.resourceVersion = String(++this.#rv);
      return structuredClone(pod) as T;
    });
  }
  delete(path: string, body?: DeleteOptions): Promise<void> {
    return Promise.resolve().then(() => {
      this.#check("DELETE", path, body);
      const pod = this.#find(path);
      if (body?.preconditions?.uid && body.preconditions.uid !== pod.metadata.uid) {
        throw new ApiError("Precondition failed", 409, "Conflict");
      }
      this.pods.delete(path);
    });
  }
  watch(): Promise<void> {
    return Promise.resolve();
  }
  close(): void {}

  count(method: string): number {
    return this.calls.filter((c) => c.method === method).length;
  }
}

// ---------------------------------------------------------------------------

/** A pod the apiserver holds in namespace "ns", with one container "app", still Pending. */
function apiPod(name: string, uid: string, spec: Partial<Pod["spec"]> = {}): Pod {
  return {
    ...testPod({
      name,
      uid,
      namespace: "ns",
      containers: ["app"],
      metadata: { annotations: { "kubernetes.io/config.source": "api" } },
      spec,
    }),
    status: { phase: "Pending" },
  };
}

const T0 = "2026-01-01T00:00:00Z";

function running(ready = true): PodStatus {
  return {
    phase: "Running",
    conditions: [
      { type: "Ready", status: ready ? "True" : "False", lastProbeTime: null },
      { type: "ContainersReady", status: ready ? "True" : "False", lastProbeTime: null },
    ],
    podIP: "10.0.0.5",
    podIPs: [{ ip: "10.0.0.5" }],
    startTime: T0,
    containerStatuses: [{
      name: "app",
      state: { running: { startedAt: T0 } },
      lastState: {},
      ready,
      restartCount: 0,
      image: "busybox",
      imageID: "sha256:1",
      containerID: "containerd://c1",
      started: true,
    }],
  };
}

function exited(code: number): PodStatus {
  const s = running(false);
  s.phase = code === 0 ? "Succeeded" : "Failed";
  s.containerStatuses![0]!.state = {
    terminated: { exitCode: code, reason: code === 0 ? "Completed" : "Error", startedAt: T0 },
  };
  return s;
}

function setup(
  opts: {
    resolve?: (pod: Pod) => ApiPodRef | undefined;
    canBeDeleted?: (uid: string) => boolean;
  } = {},
) {
  const clock = new FakeClock();
  const client = new FakePods();
  const sm = new StatusManager({ clock, logger: silentLogger });
  const writer = new ApiStatusWriter({
    statuses: sm,
    client,
    clock,
    logger: silentLogger,
    resolveApiPod: opts.resolve ??
      ((pod) => ({
        namespace: pod.metadata.namespace!,
        name: pod.metadata.name!,
        uid: pod.metadata.uid!,
      })),
    canBeDeleted: opts.canBeDeleted ?? (() => false),
  });
  writer.start();
  return { clock, client, sm, writer };
}

Deno.test("StatusManager.setPodStatus() patches once per change and never when unchanged", async () => {
  const { client, sm, writer } = setup();
  const pod = apiPod("web", "u1");
  client.add(pod);

  assert.equal(sm.setPodStatus(pod, running(false)), true);
  sm.setPodStatus(pod, running(false));
  await writer.flush();
  assert.equal(client.count("GET"), 1);
  assert.equal(client.count("PATCH"), 1);
  assert.equal(client.stored("ns", "web")!.status!.phase, "Running");

  sm.setPodStatus(pod, running(false));
  await writer.flush();
  assert.equal(client.count("PATCH"), 1, "same status again writes nothing");

  sm.setPodStatus(pod, running(true));
  await writer.flush();
  assert.equal(client.count("PATCH"), 2);
  assert.equal(client.count("GET"), 1, "the API pod from the last PATCH is reused");
  const ready = client.stored("ns", "web")!.status!.conditions!.find((c) => c.type === "Ready");
  assert.equal(ready?.status, "True");
  await writer.stop();
});

Deno.test("StatusManager sends a strategic merge patch with the uid precondition and element order", async () => {
  const { client, clock, sm, writer } = setup();
  const pod = apiPod("web", "u1");
  client.add(pod);
  sm.setPodStatus(pod, running(false));
  await writer.flush();
  clock.tick(5_000);
  sm.setPodStatus(pod, running(true));
  await writer.flush();
  const patch = client.calls.filter((c) => c.method === "PATCH")[1]!;
  assert.equal(patch.path, "/api/v1/namespaces/ns/pods/web/status");
  const ltt = "2026-01-01T00:00:05Z";
  const cs = running(true).containerStatuses;
  assert.deepEqual(patch.body, {
    metadata: { uid: "u1" },
    status: {
      "$setElementOrder/conditions": [{ type: "Ready" }, { type: "ContainersReady" }],
      // In $setElementOrder's order, as the apiserver requires.
      conditions: [
        { lastTransitionTime: ltt, status: "True", type: "Ready" },
        { lastTransitionTime: ltt, status: "True", type: "ContainersReady" },
      ],
      containerStatuses: cs,
    },
  });
  await writer.stop();
});

Deno.test("podStatusPatch() deletes removed conditions and nulls removed fields", () => {
  const old: PodStatus = {
    phase: "Running",
    podIP: "10.0.0.5",
    conditions: [{ type: "Ready", status: "True" }, { type: "Custom", status: "True" }],
  };
  const next: PodStatus = { phase: "Running", conditions: [{ type: "Ready", status: "True" }] };
  const { patch, unchanged } = podStatusPatch("u1", old, next);
  assert.equal(unchanged, false);
  assert.deepEqual(patch, {
    metadata: { uid: "u1" },
    status: {
      "$setElementOrder/conditions": [{ type: "Ready" }],
      conditions: [{ $patch: "delete", type: "Custom" }],
      podIP: null,
    },
  });
  assert.equal(podStatusPatch("u1", next, structuredClone(next)).unchanged, true);
});

Deno.test("StatusManager reconcile every 10s restores a status edited behind its back", async () => {
  const { client, clock, sm, writer } = setup();
  const pod = apiPod("web", "u1");
  client.add(pod);
  sm.setPodStatus(pod, running(true));
  await writer.flush();
  client.edit("ns", "web", (p) => {
    p.status!.phase = "Unknown";
    p.status!.conditions!.push({ type: "example.com/Gate", status: "True" });
  });
  clock.tick(10_000);
  await writer.flush();
  const stored = client.stored("ns", "web")!;
  assert.equal(stored.status!.phase, "Running");
  assert.ok(
    stored.status!.conditions!.some((c) => c.type === "example.com/Gate"),
    "conditions owned by others are kept",
  );
  const patches = client.count("PATCH");
  clock.tick(10_000);
  await writer.flush();
  assert.equal(client.count("PATCH"), patches, "no write once converged");
  await writer.stop();
});

Deno.test("StatusManager re-reads the pod and retries on a conflict", async () => {
  const { client, sm, writer } = setup();
  const pod = apiPod("web", "u1");
  client.add(pod);
  client.conflictsOnPatch = 1;
  sm.setPodStatus(pod, running(true));
  await writer.flush();
  assert.equal(client.count("PATCH"), 2);
  assert.equal(client.count("GET"), 2);
  assert.equal(client.stored("ns", "web")!.status!.phase, "Running");
  await writer.stop();
});

Deno.test("StatusManager keeps statuses through an apiserver outage and converges after it", async () => {
  const { client, clock, sm, writer } = setup();
  const a = apiPod("a", "ua");
  const b = apiPod("b", "ub");
  client.add(a);
  client.add(b);
  client.down = true;
  sm.setPodStatus(a, running(false));
  sm.setPodStatus(b, running(false));
  await writer.flush();
  const failedCalls = client.calls.length;
  assert.equal(failedCalls, 1, "one unreachable call stops the pass");
  sm.setPodStatus(a, running(true));
  await writer.flush();
  for (let i = 0; i < 6; i++) {
    clock.tick(10_000);
    await writer.flush();
  }
  assert.equal(client.stored("ns", "a")!.status!.phase, "Pending");
  client.down = false;
  clock.tick(10_000);
  await writer.flush();
  assert.equal(client.stored("ns", "a")!.status!.phase, "Running");
  assert.equal(client.stored("ns", "b")!.status!.phase, "Running");
  const readyA = client.stored("ns", "a")!.status!.conditions!.find((c) => c.type === "Ready");
  assert.equal(readyA?.status, "True", "the latest status, not the first, is written");
  assert.equal(sm.getPodStatus("ua")!.phase, "Running");
  await writer.stop();
});

Deno.test("StatusManager retries a failed write with backoff before the next reconcile", async () => {
  const { client, clock, sm, writer } = setup();
  const pod = apiPod("web", "u1");
  client.add(pod);
  client.down = true;
  sm.setPodStatus(pod, running(true));
  await writer.flush();
  client.down = false;
  clock.tick(1_000);
  await writer.flush();
  assert.equal(client.stored("ns", "web")!.status!.phase, "Running");
  await writer.stop();
});

Deno.test("StatusManager.setPodStatus() rejects a terminated container running again under Never", async () => {
  const { client, sm, writer } = setup();
  const pod = apiPod("job", "u1", { restartPolicy: "Never" });
  client.add(pod);
  assert.equal(sm.setPodStatus(pod, exited(1)), true);
  assert.equal(sm.setPodStatus(pod, running(true)), false);
  assert.ok(sm.getPodStatus("u1")!.containerStatuses![0]!.state.terminated);
  await writer.flush();
  assert.equal(client.stored("ns", "job")!.status!.phase, "Failed");

  const onFailure = apiPod("retry", "u2", { restartPolicy: "OnFailure" });
  sm.setPodStatus(onFailure, exited(1));
  assert.equal(sm.setPodStatus(onFailure, running(true)), true, "OnFailure restarts a failed one");
  const always = apiPod("svc", "u3");
  sm.setPodStatus(always, exited(0));
  assert.equal(sm.setPodStatus(always, running(true)), true);
  await writer.stop();
});

Deno.test("StatusManager never moves a terminal phase back and keeps transition times", async () => {
  const { clock, sm, writer } = setup();
  const pod = apiPod("svc", "u1");
  sm.setPodStatus(pod, running(true));
  const first = sm.getPodStatus("u1")!.conditions!.find((c) => c.type === "Ready")!;
  assert.equal(first.lastTransitionTime, T0);
  clock.tick(30_000);
  const again = running(true);
  again.podIP = "10.0.0.6";
  sm.setPodStatus(pod, again);
  const kept = sm.getPodStatus("u1")!.conditions!.find((c) => c.type === "Ready")!;
  assert.equal(kept.lastTransitionTime, T0, "unchanged condition keeps its time");

  const failed = running(false);
  failed.phase = "Failed";
  sm.setPodStatus(pod, failed);
  sm.setPodStatus(pod, running(true));
  assert.equal(sm.getPodStatus("u1")!.phase, "Failed");
  await writer.stop();
});

Deno.test("StatusManager writes a static pod's status to its mirror pod", async () => {
  const found: { mirror?: ApiPodRef } = {};
  const { client, clock, sm, writer } = setup({ resolve: () => found.mirror });
  const staticPod: Pod = {
    metadata: {
      name: "etcd-node1",
      namespace: "kube-system",
      uid: "static-uid",
      annotations: { "kubernetes.io/config.source": "file" },
    },
    spec: { containers: [{ name: "app" }] },
  };
  sm.setPodStatus(staticPod, running(true));
  await writer.flush();
  assert.equal(client.calls.length, 0, "no mirror pod yet: nothing to write");

  const m = apiPod("etcd-node1", "mirror-uid");
  m.metadata.namespace = "kube-system";
  m.metadata.annotations = { "kubernetes.io/config.mirror": "hash" };
  client.add(m);
  found.mirror = { namespace: "kube-system", name: "etcd-node1", uid: "mirror-uid" };
  clock.tick(10_000);
  await writer.flush();
  const patch = client.calls.find((c) => c.method === "PATCH")!;
  assert.equal(patch.path, "/api/v1/namespaces/kube-system/pods/etcd-node1/status");
  assert.deepEqual((patch.body as JsonObject).metadata, { uid: "mirror-uid" });
  assert.equal(client.stored("kube-system", "etcd-node1")!.status!.phase, "Running");
  assert.equal(sm.getPodStatus("static-uid")!.phase, "Running");
  await writer.stop();
});

Deno.test("StatusManager deletes a terminated pod only once canBeDeleted says so", async () => {
  let gone = false;
  const { client, clock, sm, writer } = setup({ canBeDeleted: (uid) => uid === "u1" && gone });
  const pod = apiPod("web", "u1");
  pod.metadata.deletionTimestamp = T0;
  pod.metadata.deletionGracePeriodSeconds = 30;
  client.add(pod);
  sm.setPodStatus(pod, exited(0));
  await writer.flush();
  assert.equal(client.count("DELETE"), 0);
  assert.equal(client.stored("ns", "web")!.status!.phase, "Succeeded");

  gone = true;
  clock.tick(10_000);
  await writer.flush();
  const del = client.calls.find((c) => c.method === "DELETE")!;
  assert.equal(del.path, "/api/v1/namespaces/ns/pods/web");
  assert.deepEqual(del.body, { gracePeriodSeconds: 0, preconditions: { uid: "u1" } });
  assert.equal(client.stored("ns", "web"), undefined);
  assert.equal(sm.getPodStatus("u1"), undefined, "the status is forgotten after deletion");
  await writer.stop();
});

Deno.test("StatusManager stops writing a pod the apiserver no longer has", async () => {
  const { client, clock, sm, writer } = setup();
  const pod = apiPod("web", "u1");
  sm.setPodStatus(pod, running(true));
  await writer.flush();
  assert.equal(client.count("GET"), 1);
  clock.tick(1_000);
  await writer.flush();
  assert.equal(client.calls.length, 1, "a 404 is not retried");
  sm.removeOrphanedStatuses(new Set());
  assert.equal(sm.getPodStatus("u1"), undefined);
  await writer.stop();
});

Deno.test("StatusManager.terminatePod() marks unknown containers and a terminal phase", async () => {
  const { client, sm, writer } = setup();
  const pod = apiPod("web", "u1");
  client.add(pod);
  sm.setPodStatus(pod, running(true));
  sm.terminatePod(pod);
  const s = sm.getPodStatus("u1")!;
  assert.equal(s.phase, "Failed");
  assert.deepEqual(s.containerStatuses![0]!.state, {
    terminated: {
      exitCode: 137,
      reason: "ContainerStatusUnknown",
      message: "The container could not be located when the pod was terminated",
    },
  });
  await writer.flush();
  const ready = client.stored("ns", "web")!.status!.conditions!.find((c) => c.type === "Ready")!;
  assert.equal(ready.status, "False", "a terminal pod is never shown ready");
  assert.equal(ready.reason, "PodFailed");
  await writer.stop();
});

Deno.test("StatusManager sets status.observedGeneration from the pod and writes each new generation", async () => {
  const { client, sm, writer } = setup();
  const pod = apiPod("web", "u1");
  pod.metadata.generation = 1;
  client.add(pod);
  sm.setPodStatus(pod, running(true));
  await writer.flush();
  assert.equal(client.stored("ns", "web")!.status!.observedGeneration, 1);

  // A spec update bumps the generation: the same runtime status is written again.
  const updated = structuredClone(pod);
  updated.metadata.generation = 2;
  sm.setPodStatus(updated, running(true));
  await writer.flush();
  assert.equal(client.count("PATCH"), 2);
  assert.equal(client.stored("ns", "web")!.status!.observedGeneration, 2);

  // A status set for the older pod object does not move it back.
  sm.setPodStatus(pod, running(false));
  assert.equal(sm.getPodStatus("u1")!.observedGeneration, 2);

  // A pod without a generation (a static pod from a file) gets none.
  const file = apiPod("file", "u2");
  sm.setPodStatus(file, running(true));
  assert.equal(sm.getPodStatus("u2")!.observedGeneration, undefined);
  await writer.stop();
});
