import assert from "node:assert/strict";
import type { Lease, Node, ObjectReference } from "../../lib/api/cluster_types.ts";
import type { EventRecorder, EventType } from "../../lib/events/types.ts";
import {
  ApiError,
  type CallOptions,
  type KubeClient,
  type ObjectList,
  type PatchType,
} from "../../lib/kubeapi/types.ts";
import {
  NodeLeaseController,
  NodeStatusManager,
  type NodeStatusManagerOptions,
  NodeStatusUpdater,
  registerNode,
  type RuntimeReadiness,
} from "../../lib/nodestatus/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { advance, applyStrategicMergePatch, settle, testMachineInfo } from "../kit/mod.ts";

// deno-lint-ignore no-explicit-any
type Obj = Record<string, any>;

interface Call {
  method: string;
  path: string;
  body?: unknown;
  type?: PatchType;
}

/** The list fields of a Node's status and their merge keys. */
const NODE_MERGE_KEYS = { conditions: "type", addresses: "type" };

/** An in-memory apiserver: objects by path, resourceVersions, conflicts, injected failures. */
class FakeApi implements KubeClient {
  readonly objects = new Map<string, Obj>();
  readonly calls: Call[] = [];
  #rv = 100;
  #failures: { method: string; err: Error }[] = [];

  fail(
    method: string,
    times: number,
    err: Error = new ApiError("etcd timeout", 500, "InternalError"),
  ) {
    for (let i = 0; i < times; i++) this.#failures.push({ method, err });
  }

  put(path: string, obj: Obj): void {
    this.objects.set(path, {
      ...obj,
      metadata: { uid: `uid-${this.#rv}`, ...obj.metadata, resourceVersion: String(++this.#rv) },
    });
  }

  /** Changes an object as another writer would. */
  mutate(path: string, fn: (o: Obj) => void): void {
    const o = structuredClone(this.objects.get(path)!);
    fn(o);
    o.metadata.resourceVersion = String(++this.#rv);
    this.objects.set(path, o);
  }

  count(method: string, suffix = ""): number {
    return this.calls.filter((c) => c.method === method && c.path.endsWith(suffix)).length;
  }

  #enter(call: Call): void {
    this.calls.push(call);
    const i = this.#failures.findIndex((f) => f.method === call.method);
    if (i >= 0) throw this.#failures.splice(i, 1)[0]!.err;
  }

  #notFound(path: string): ApiError {
    return new ApiError(`${path} not found`, 404, "NotFound");
  }

  get<T>(path: string, _opts?: CallOptions): Promise<T> {
    this.#enter({ method: "get", path });
    const o = this.objects.get(path);
    if (!o) return Promise.reject(this.#notFound(path));
    return Promise.resolve(structuredClone(o) as T);
  }

  create<T>(path: string, body: unknown): Promise<T> {
    this.#enter({ method: "create", path, body });
    const obj = structuredClone(body) as Obj;
    const objPath = `${path}/${obj.metadata.name}`;
    if (this.objects.has(objPath)) {
      return Promise.reject(new ApiError("already exists", 409, "AlreadyExists"));
    }
    delete obj.metadata.resourceVersion;
    this.put(objPath, obj);
    return Promise.resolve(structuredClone(this.objects.get(objPath)) as T);
  }

  update<T>(path: string, body: unknown): Promise<T> {
    this.#enter({ method: "update", path, body });
    const old = this.objects.get(path);
    const obj = structuredClone(body) as Obj;
    if (!old) return Promise.reject(this.#notFound(path));
    if (obj.metadata.resourceVersion !== old.metadata.resourceVersion) {
      return Promise.reject(new ApiError("the object has been modified", 409, "Conflict"));
    }
    this.put(path, { ...obj, metadata: { ...obj.metadata, uid: old.metadata.uid } });
    return Promise.resolve(structuredClone(this.objects.get(path)) as T);
  }

  patch<T>(path: string, body: unknown, type: PatchType): Promise<T> {
    this.#enter({ method: "patch", path, body, type });
    const objPath = path.replace(/\/status$/, "");
    const old = this.objects.get(objPath);
    if (!old) return Promise.reject(this.#notFound(path));
    const merged = applyStrategicMergePatch(old, body as Obj, NODE_MERGE_KEYS);
    this.put(objPath, { ...merged, spec: old.spec });
    return Promise.resolve(structuredClone(this.objects.get(objPath)) as T);
  }

  list<T>(): Promise<ObjectList<T>> {
    return Promise.resolve({ items: [], metadata: {} });
  }

  delete(): Promise<void> {
    return Promise.resolve();
  }

  watch(): Promise<void> {
    return Promise.resolve();
  }

  close(): void {}
}

class Events implements EventRecorder {
  readonly recorded: { ref: ObjectReference; type: EventType; reason: string; message: string }[] =
    [];
  event(ref: ObjectReference, type: EventType, reason: string, message: string): void {
    this.recorded.push({ ref, type, reason, message });
  }
  reasons(): string[] {
    return this.recorded.map((e) => e.reason);
  }
}

const machine = testMachineInfo();

const NODE_PATH = "/api/v1/nodes/n1";
const LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1";

function setup(over: Partial<NodeStatusManagerOptions> = {}) {
  const api = new FakeApi();
  const clock = new FakeClock();
  const events = new Events();
  let readiness: RuntimeReadiness = { ok: true };
  const manager = new NodeStatusManager({
    client: api,
    nodeName: "n1",
    clock,
    logger: silentLogger,
    events,
    machineInfo: machine,
    nodeIP: "10.0.0.5",
    runtimeReady: () => readiness,
    runtimeVersion: () => Promise.resolve({ runtimeName: "containerd", runtimeVersion: "1.6.20" }),
    ...over,
  });
  return {
    api,
    clock,
    events,
    manager,
    setReady: (r: RuntimeReadiness) => (readiness = r),
  };
}

Deno.test("NodeStatusManager.start() creates the Node and its Lease, and records the first condition events", async () => {
  const { api, manager, events } = setup();
  manager.start();
  const node = await manager.registered;
  await settle();
  assert.equal(api.count("create", "/nodes"), 1);
  assert.equal(node.metadata.labels?.["kubernetes.io/hostname"], "n1");
  assert.equal(node.status?.nodeInfo?.containerRuntimeVersion, "containerd://1.6.20");
  assert.equal(node.status?.conditions?.at(-1)?.reason, "KubeletReady");
  assert.deepEqual(events.reasons(), [
    "NodeHasSufficientMemory",
    "NodeHasNoDiskPressure",
    "NodeHasSufficientPID",
  ]);
  assert.deepEqual(events.recorded[0]?.ref, { kind: "Node", name: "n1", uid: "n1", namespace: "" });
  const lease = api.objects.get(LEASE_PATH) as Lease;
  assert.equal(lease.spec.holderIdentity, "n1");
  assert.equal(lease.spec.leaseDurationSeconds, 40);
  assert.match(lease.spec.renewTime!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  assert.equal(manager.node()?.metadata.uid, node.metadata.uid);
  await manager.stop();
});

Deno.test("NodeStatusManager sends no PATCH while nothing changes, then one after nodeStatusReportFrequency", async () => {
  const { api, clock, manager } = setup();
  manager.start();
  await manager.registered;
  await settle();
  await advance(clock, 290_000, 10_000);
  assert.equal(api.count("patch", "/status"), 0);
  assert.ok(api.count("get", NODE_PATH) >= 29, "the status is recomputed every 10s");
  await advance(clock, 10_000, 10_000);
  assert.equal(api.count("patch", "/status"), 1);
  const patch = api.calls.find((c) => c.method === "patch")!;
  assert.equal(patch.type, "strategic");
  assert.deepEqual(Object.keys((patch.body as Obj).status), [
    "conditions",
    "$setElementOrder/conditions",
  ]);
  await manager.stop();
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("NodeStatusManager registers with its client and sends status and Lease through the heartbeat client", async () => {
  const api = new FakeApi();
  const heartbeat: string[] = [];
  // The same fake apiserver, recording what goes through the heartbeat client.
  const heartbeatClient = new Proxy(api, {
    get: (target, method: string) => {
      const value = Reflect.get(target, method);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        heartbeat.push(`${method} ${args[0]}`);
        return value.apply(target, args);
      };
    },
  });
  const { clock, manager } = setup({ client: api, heartbeatClient });
  manager.start();
  await manager.registered;
  await settle();
  await advance(clock, 20_000, 10_000);
  assert.ok(!heartbeat.some((c) => c.startsWith("create /api/v1/nodes")), `${heartbeat}`);
  assert.equal(api.count("create", "/nodes"), 1);
  assert.ok(heartbeat.includes(`get ${NODE_PATH}`), `${heartbeat}`);
  assert.ok(heartbeat.includes(`update ${LEASE_PATH}`), `${heartbeat}`);
  await manager.stop();
});

Deno.test("NodeStatusManager patches at once when Ready flips, with NodeNotReady and NodeReady events", async () => {
  const { api, clock, manager, events, setReady } = setup();
  manager.start();
  await manager.registered;
  await settle();
  setReady({ ok: false, message: "container runtime is down" });
  await advance(clock, 10_000);
  assert.equal(api.count("patch", "/status"), 1);
  const ready = (api.objects.get(NODE_PATH) as Node).status?.conditions?.at(-1);
  assert.equal(ready?.status, "False");
  assert.equal(ready?.reason, "KubeletNotReady");
  assert.equal(ready?.message, "container runtime is down");
  assert.equal(events.reasons().at(-1), "NodeNotReady");
  setReady({ ok: true });
  await manager.syncNow();
  assert.equal(api.count("patch", "/status"), 2);
  assert.equal(events.reasons().at(-1), "NodeReady");
  assert.equal(manager.node()?.status?.conditions?.at(-1)?.status, "True");
  await manager.stop();
});

Deno.test("NodeStatusManager adopts an existing Node: owned labels updated, others and taints kept, Rebooted recorded", async () => {
  const { api, clock, manager, events } = setup();
  api.put(NODE_PATH, {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: "n1",
      uid: "old-uid",
      labels: { "kubernetes.io/hostname": "stale", "team.example.com/owner": "me" },
    },
    spec: { taints: [{ key: "maintenance", effect: "NoSchedule" }] },
    status: {
      nodeInfo: { bootID: "boot-0" },
      conditions: [{ type: "Ready", status: "Unknown", reason: "NodeStatusUnknown" }],
    },
  });
  manager.start();
  const node = await manager.registered;
  await settle();
  assert.equal(api.count("create", "/nodes"), 1);
  assert.equal(node.metadata.uid, "old-uid");
  const stored = api.objects.get(NODE_PATH) as Node;
  assert.equal(stored.metadata.labels?.["kubernetes.io/hostname"], "n1");
  assert.equal(stored.metadata.labels?.["team.example.com/owner"], "me");
  assert.deepEqual(stored.spec?.taints, [{ key: "maintenance", effect: "NoSchedule" }]);
  assert.equal(stored.status?.conditions?.at(-1)?.status, "True");
  assert.equal(stored.status?.nodeInfo?.bootID, "boot-1");
  assert.ok(events.reasons().includes("Rebooted"));
  assert.ok(events.reasons().includes("NodeReady"));
  assert.deepEqual(
    (api.objects.get(LEASE_PATH) as Lease).metadata.ownerReferences ?? [],
    [],
    "the lease was created before the node's UID was known",
  );
  await advance(clock, 10_000, 10_000);
  assert.deepEqual((api.objects.get(LEASE_PATH) as Lease).metadata.ownerReferences, [
    { apiVersion: "v1", kind: "Node", name: "n1", uid: "old-uid" },
  ]);
  await manager.stop();
});

Deno.test("registerNode() retries with doubling backoff until the apiserver accepts the Node", async () => {
  const api = new FakeApi();
  const clock = new FakeClock();
  api.fail("create", 3);
  let done = false;
  const p = registerNode({
    client: api,
    clock,
    logger: silentLogger,
    initialNode: () => ({ metadata: { name: "n1" } }),
  }).then((r) => {
    done = true;
    return r;
  });
  await settle();
  assert.equal(api.count("create"), 1);
  await advance(clock, 100, 100);
  assert.equal(api.count("create"), 2);
  await advance(clock, 199, 199);
  assert.equal(api.count("create"), 2, "the second wait is 200ms");
  await advance(clock, 1, 1);
  assert.equal(api.count("create"), 3);
  assert.equal(done, false);
  await advance(clock, 400, 400);
  const result = await p;
  assert.equal(result.created, true);
  assert.equal(api.count("create"), 4);
});

Deno.test("NodeStatusUpdater.update() retries five times per round, then names the node", async () => {
  const api = new FakeApi();
  const clock = new FakeClock();
  api.put(NODE_PATH, { metadata: { name: "n1" }, status: {} });
  const updater = new NodeStatusUpdater({
    client: api,
    nodeName: "n1",
    clock,
    logger: silentLogger,
    events: new Events(),
    compute: (prev) => ({
      status: { ...prev, conditions: [{ type: "Ready", status: "True" }] },
      events: [],
    }),
    reportFrequencyMs: 300_000,
  });
  api.fail("patch", 4);
  assert.equal(await updater.update(), "patched");
  assert.equal(api.count("patch"), 5);
  api.mutate(NODE_PATH, (o) => (o.status = {}));
  api.fail("get", 5);
  await assert.rejects(updater.update(), /update node status of "n1" exceeds retry count \(5\)/);
});

function leaseController(api: FakeApi, clock: FakeClock, uid?: string) {
  return new NodeLeaseController({
    client: api,
    nodeName: "n1",
    clock,
    logger: silentLogger,
    nodeUID: () => uid,
  });
}

Deno.test("NodeLeaseController renews every 10s with PUT on the last resourceVersion and owns the Lease by the Node", async () => {
  const api = new FakeApi();
  const clock = new FakeClock();
  const lease = leaseController(api, clock, "node-uid");
  lease.start();
  await settle();
  assert.equal(api.count("create"), 1);
  const created = api.objects.get(LEASE_PATH) as Lease;
  assert.deepEqual(created.metadata.ownerReferences, [
    { apiVersion: "v1", kind: "Node", name: "n1", uid: "node-uid" },
  ]);
  assert.equal(created.spec.renewTime, "2026-01-01T00:00:00.000000Z");
  await advance(clock, 9_000);
  assert.equal(api.count("update"), 0);
  await advance(clock, 1_000);
  assert.equal(api.count("update"), 1);
  const put = api.calls.find((c) => c.method === "update")!.body as Lease;
  assert.equal(put.metadata.resourceVersion, created.metadata.resourceVersion);
  assert.equal(
    (api.objects.get(LEASE_PATH) as Lease).spec.renewTime,
    "2026-01-01T00:00:10.000000Z",
  );
  await lease.stop();
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("NodeLeaseController re-reads the Lease after a conflict and renews on top of it", async () => {
  const api = new FakeApi();
  const clock = new FakeClock();
  const lease = leaseController(api, clock);
  lease.start();
  await settle();
  api.mutate(LEASE_PATH, (o) => (o.metadata.labels = { touched: "yes" }));
  await advance(clock, 10_000);
  assert.equal(api.count("update"), 2, "one conflict, one success");
  const stored = api.objects.get(LEASE_PATH) as Lease;
  assert.equal(stored.metadata.labels?.touched, "yes");
  assert.equal(stored.spec.renewTime, "2026-01-01T00:00:10.000000Z");
  assert.equal(lease.latest()?.metadata.resourceVersion, stored.metadata.resourceVersion);
  await lease.stop();
});

Deno.test("NodeLeaseController backs off 200ms, 400ms, … when the Lease cannot be read, and keeps going", async () => {
  const api = new FakeApi();
  const clock = new FakeClock();
  api.fail("get", 3);
  const lease = leaseController(api, clock);
  lease.start();
  await settle();
  assert.equal(api.count("get"), 1);
  await advance(clock, 200, 200);
  assert.equal(api.count("get"), 2);
  await advance(clock, 399, 399);
  assert.equal(api.count("get"), 2);
  await advance(clock, 1, 1);
  assert.equal(api.count("get"), 3);
  await advance(clock, 800, 800);
  assert.equal(api.count("get"), 4);
  assert.equal(api.count("create"), 1);
  await advance(clock, 10_000);
  assert.equal(api.count("update"), 1);
  await lease.stop();
});

Deno.test("NodeLeaseController adopts an existing Lease on restart instead of creating one", async () => {
  const api = new FakeApi();
  const clock = new FakeClock();
  api.put(LEASE_PATH, {
    metadata: { name: "n1", namespace: "kube-node-lease" },
    spec: {
      holderIdentity: "n1",
      leaseDurationSeconds: 40,
      renewTime: "2025-12-31T23:59:00.000000Z",
    },
  });
  const lease = leaseController(api, clock, "node-uid");
  lease.start();
  await settle();
  assert.equal(api.count("create"), 0);
  assert.equal(api.count("update"), 1);
  const stored = api.objects.get(LEASE_PATH) as Lease;
  assert.equal(stored.spec.renewTime, "2026-01-01T00:00:00.000000Z");
  assert.equal(stored.metadata.ownerReferences?.[0]?.uid, "node-uid");
  await lease.stop();
});

Deno.test("NodeStatusManager rejects node labels the NodeRestriction plugin forbids", () => {
  assert.throws(
    () => setup({ options: { nodeLabels: { "node-role.kubernetes.io/worker": "" } } }),
    /unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: \[node-role.kubernetes.io\/worker\]/,
  );
});

Deno.test("NodeStatusManager.stop() before registration rejects registered and leaves no timers", async () => {
  const { api, clock, manager } = setup();
  api.fail("create", 10);
  manager.start();
  await settle();
  await manager.stop();
  await assert.rejects(manager.registered, /stopped/);
  assert.equal(clock.pendingTimers, 0);
});
