import assert from "node:assert/strict";
import type { Node } from "../../lib/api/cluster_types.ts";
import { isStaticPod } from "../../lib/api/mod.ts";
import type { Pod } from "../../lib/api/types.ts";
import {
  ApiError,
  type CallOptions,
  type DeleteOptions,
  type KubeClient,
  type ObjectList,
  type WatchEvent,
} from "../../lib/kubeapi/types.ts";
import { buildMirrorPod, isMirrorPodOf, MirrorPodManager } from "../../lib/mirror/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { testPod } from "../kit/mod.ts";

const MIRROR = "kubernetes.io/config.mirror";

/** An in-memory apiserver holding pods by path, recording every call. */
class FakePods implements KubeClient {
  pods = new Map<string, Pod>();
  calls: string[] = [];
  deletes: DeleteOptions[] = [];
  /** Makes the next calls of a method fail with this error. */
  failNext: Partial<Record<"create" | "delete", unknown[]>> = {};
  #uid = 0;

  add(pod: Pod): Pod {
    const stored = structuredClone(pod);
    stored.metadata.uid ??= `api-uid-${++this.#uid}`;
    this.pods.set(`/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`, stored);
    return structuredClone(stored);
  }

  create<T>(path: string, body: unknown): Promise<T> {
    this.calls.push(`create ${path}`);
    const err = this.failNext.create?.shift();
    if (err) return Promise.reject(err);
    const pod = body as Pod;
    const key = `${path}/${pod.metadata.name}`;
    if (this.pods.has(key)) {
      return Promise.reject(
        new ApiError(`pods "${pod.metadata.name}" already exists`, 409, "AlreadyExists"),
      );
    }
    return Promise.resolve(this.add(pod) as T);
  }

  get<T>(path: string): Promise<T> {
    this.calls.push(`get ${path}`);
    const pod = this.pods.get(path);
    if (!pod) return Promise.reject(new ApiError("not found", 404, "NotFound"));
    return Promise.resolve(structuredClone(pod) as T);
  }

  delete(path: string, body?: DeleteOptions): Promise<void> {
    this.calls.push(`delete ${path}`);
    this.deletes.push(body ?? {});
    const err = this.failNext.delete?.shift();
    if (err) return Promise.reject(err);
    const pod = this.pods.get(path);
    if (!pod) return Promise.reject(new ApiError("not found", 404, "NotFound"));
    const uid = body?.preconditions?.uid;
    if (uid && uid !== pod.metadata.uid) {
      return Promise.reject(new ApiError("Precondition failed: UID", 409, "Conflict"));
    }
    this.pods.delete(path);
    return Promise.resolve();
  }

  list<T>(): Promise<ObjectList<T>> {
    throw new Error("not used");
  }
  update<T>(): Promise<T> {
    throw new Error("not used");
  }
  patch<T>(): Promise<T> {
    throw new Error("not used");
  }
  watch<T>(_p: string, _e: (e: WatchEvent<T>) => void, _o?: CallOptions): Promise<void> {
    throw new Error("not used");
  }
  close(): void {}

  /** What the apiserver's watch would show: every mirror pod. */
  mirrors(): Pod[] {
    return [...this.pods.values()].filter((p) => p.metadata.annotations?.[MIRROR] !== undefined);
  }
}

const NODE: Node = { metadata: { name: "node1", uid: "node-uid" } };

function staticPod(name: string, hash: string, source = "file"): Pod {
  const pod = testPod({
    name: `${name}-node1`,
    namespace: "kube-system",
    uid: hash,
    metadata: {
      labels: { component: name },
      annotations: {
        "kubernetes.io/config.hash": hash,
        "kubernetes.io/config.source": source,
        "kubernetes.io/config.seen": "2026-01-01T00:00:00.000Z",
      },
    },
    containers: [{ name: "c", image: `img:${hash}` }],
    spec: { nodeName: "node1" },
  });
  pod.status = { phase: "Pending" };
  return pod;
}

function setup(opts: { node?: Node | undefined; sourcesReady?: () => boolean } = {}) {
  const api = new FakePods();
  const clock = new FakeClock();
  const node = "node" in opts ? opts.node : NODE;
  const manager = new MirrorPodManager({
    client: api,
    nodeName: "node1",
    node: () => node,
    clock,
    ...(opts.sourcesReady ? { sourcesReady: opts.sourcesReady } : {}),
  });
  return { api, clock, manager };
}

const ETCD_PATH = "/api/v1/namespaces/kube-system/pods/etcd-node1";

Deno.test("buildMirrorPod() copies name, labels, annotations and spec, adds the hash and the node as controller", () => {
  const pod = staticPod("etcd", "h1");
  const mirror = buildMirrorPod(pod, { name: "node1", uid: "node-uid" });
  assert.equal(mirror.metadata.name, "etcd-node1");
  assert.equal(mirror.metadata.namespace, "kube-system");
  assert.deepEqual(mirror.metadata.labels, { component: "etcd" });
  assert.equal(mirror.metadata.annotations![MIRROR], "h1");
  assert.equal(mirror.metadata.annotations!["kubernetes.io/config.source"], "file");
  assert.deepEqual(mirror.metadata.ownerReferences, [
    { apiVersion: "v1", kind: "Node", name: "node1", uid: "node-uid", controller: true },
  ]);
  assert.deepEqual(mirror.spec, pod.spec);
  assert.equal(mirror.metadata.uid, undefined, "the apiserver assigns the UID");
  assert.equal(mirror.status, undefined);
  assert.equal(pod.metadata.annotations![MIRROR], undefined, "the static pod is not modified");
});

Deno.test("isMirrorPodOf() needs the same name and hash and no deletion in progress", () => {
  const pod = staticPod("etcd", "h1");
  const mirror = buildMirrorPod(pod, { name: "node1", uid: "n" });
  assert.equal(isMirrorPodOf(mirror, pod), true);
  assert.equal(isMirrorPodOf(mirror, staticPod("etcd", "h2")), false);
  assert.equal(isMirrorPodOf(mirror, staticPod("kube-apiserver", "h1")), false);
  const deleting = structuredClone(mirror);
  deleting.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
  assert.equal(isMirrorPodOf(deleting, pod), false);
  assert.equal(isStaticPod(pod), true);
  assert.equal(isStaticPod(staticPod("x", "h", "api")), false);
});

Deno.test("MirrorPodManager.reconcile() creates a mirror pod for each static pod", async () => {
  const { api, manager } = setup();
  manager.setMirrorPods([]);
  await manager.reconcile([staticPod("etcd", "h1"), staticPod("web", "h9", "api")]);
  assert.deepEqual(api.calls, ["create /api/v1/namespaces/kube-system/pods"]);
  const created = api.pods.get(ETCD_PATH)!;
  assert.equal(created.metadata.annotations![MIRROR], "h1");
  assert.equal(created.metadata.ownerReferences![0]!.uid, "node-uid");
  // Known before the watch shows it: no second create on the next pass.
  assert.equal(manager.mirrorPodFor(staticPod("etcd", "h1"))?.metadata.uid, created.metadata.uid);
  await manager.reconcile([staticPod("etcd", "h1")]);
  assert.equal(api.calls.length, 1);
});

Deno.test("MirrorPodManager.reconcile() leaves a current mirror pod alone", async () => {
  const { api, manager } = setup();
  api.add(buildMirrorPod(staticPod("etcd", "h1"), { name: "node1", uid: "node-uid" }));
  await manager.reconcile([staticPod("etcd", "h1")], api.mirrors());
  assert.deepEqual(api.calls, []);
});

Deno.test("MirrorPodManager.reconcile() deletes with a UID precondition and recreates a mirror whose hash changed", async () => {
  const { api, manager } = setup();
  const old = api.add(buildMirrorPod(staticPod("etcd", "h1"), { name: "node1", uid: "node-uid" }));
  await manager.reconcile([staticPod("etcd", "h2")], api.mirrors());
  assert.deepEqual(api.calls, [
    `delete ${ETCD_PATH}`,
    "create /api/v1/namespaces/kube-system/pods",
  ]);
  assert.deepEqual(api.deletes, [{
    gracePeriodSeconds: 0,
    preconditions: { uid: old.metadata.uid },
  }]);
  const now = api.pods.get(ETCD_PATH)!;
  assert.equal(now.metadata.annotations![MIRROR], "h2");
  assert.notEqual(now.metadata.uid, old.metadata.uid);
  assert.equal(manager.mirrorPodFor(staticPod("etcd", "h2"))?.metadata.uid, now.metadata.uid);
  assert.equal(manager.mirrorPodFor(staticPod("etcd", "h1")), undefined);
});

Deno.test("MirrorPodManager.reconcile() replaces a mirror pod that someone deleted gracefully", async () => {
  const { api, manager } = setup();
  const mirror = buildMirrorPod(staticPod("etcd", "h1"), { name: "node1", uid: "node-uid" });
  mirror.metadata.deletionTimestamp = "2026-01-01T00:00:30Z";
  const old = api.add(mirror);
  assert.equal(manager.mirrorPodFor(staticPod("etcd", "h1")), undefined);
  await manager.reconcile([staticPod("etcd", "h1")], api.mirrors());
  assert.equal(api.deletes[0]!.preconditions?.uid, old.metadata.uid);
  const now = api.pods.get(ETCD_PATH)!;
  assert.equal(now.metadata.deletionTimestamp, undefined);
  assert.notEqual(now.metadata.uid, old.metadata.uid);
});

Deno.test("MirrorPodManager.reconcile() recreates a mirror pod that disappeared from the watch", async () => {
  const { api, manager } = setup();
  await manager.reconcile([staticPod("etcd", "h1")], []);
  api.pods.clear(); // kubectl delete --force
  await manager.reconcile([staticPod("etcd", "h1")], api.mirrors());
  assert.equal(api.calls.filter((c) => c.startsWith("create")).length, 2);
  assert.ok(api.pods.has(ETCD_PATH));
});

Deno.test("MirrorPodManager.reconcile() deletes orphaned mirror pods only once sources are ready", async () => {
  let ready = false;
  const { api, manager } = setup({ sourcesReady: () => ready });
  const orphan = api.add(
    buildMirrorPod(staticPod("old", "h1"), { name: "node1", uid: "node-uid" }),
  );
  await manager.reconcile([], api.mirrors());
  assert.deepEqual(
    api.calls,
    [],
    "before every source reported, a missing static pod may just be unread",
  );
  ready = true;
  await manager.reconcile([], api.mirrors());
  assert.deepEqual(api.calls, ["delete /api/v1/namespaces/kube-system/pods/old-node1"]);
  assert.equal(api.deletes[0]!.preconditions?.uid, orphan.metadata.uid);
  assert.equal(api.pods.size, 0);
  assert.deepEqual(manager.mirrorPods(), []);
});

Deno.test("MirrorPodManager.reconcile() creates nothing while the node is unknown or being deleted", async () => {
  const unknown = setup({ node: undefined });
  await unknown.manager.reconcile([staticPod("etcd", "h1")], []);
  assert.deepEqual(unknown.api.calls, []);
  const deleting = setup({
    node: { metadata: { name: "node1", uid: "u", deletionTimestamp: "2026-01-01T00:00:00Z" } },
  });
  await deleting.manager.reconcile([staticPod("etcd", "h1")], []);
  assert.deepEqual(deleting.api.calls, []);
});

Deno.test("MirrorPodManager.reconcile() does nothing until the apiserver's mirror pods are known", async () => {
  const { api, manager } = setup();
  await manager.reconcile([staticPod("etcd", "h1")]);
  assert.deepEqual(api.calls, []);
  manager.setMirrorPods([]);
  await manager.reconcile([staticPod("etcd", "h1")]);
  assert.equal(api.calls.length, 1);
});

Deno.test("MirrorPodManager.reconcile() adopts a current mirror pod it finds on AlreadyExists", async () => {
  const { api, manager } = setup();
  // Created by a previous run; the watch has not delivered it yet.
  const existing = api.add(
    buildMirrorPod(staticPod("etcd", "h1"), { name: "node1", uid: "node-uid" }),
  );
  await manager.reconcile([staticPod("etcd", "h1")], []);
  assert.deepEqual(api.calls, ["create /api/v1/namespaces/kube-system/pods", `get ${ETCD_PATH}`]);
  assert.equal(manager.mirrorPodFor(staticPod("etcd", "h1"))?.metadata.uid, existing.metadata.uid);
  await manager.reconcile([staticPod("etcd", "h1")]);
  assert.equal(api.calls.length, 2);
});

Deno.test("MirrorPodManager.reconcile() never deletes an ordinary pod that holds the name", async () => {
  const { api, clock, manager } = setup();
  const own = staticPod("etcd", "h1");
  api.add({ metadata: { name: "etcd-node1", namespace: "kube-system" }, spec: own.spec });
  await manager.reconcile([own], []);
  clock.tick(1000);
  await manager.reconcile([own], []);
  assert.ok(!api.calls.some((c) => c.startsWith("delete")));
  assert.equal(api.pods.get(ETCD_PATH)!.metadata.annotations?.[MIRROR], undefined);
});

Deno.test("MirrorPodManager.reconcile() retries a failed create after 1s, then 2s", async () => {
  const { api, clock, manager } = setup();
  const down = new Error("POST /api/v1/namespaces/kube-system/pods: connection refused");
  api.failNext.create = [down, down];
  const pods = [staticPod("etcd", "h1")];
  const creates = () => api.calls.filter((c) => c.startsWith("create")).length;
  await manager.reconcile(pods, []);
  assert.equal(creates(), 1);
  clock.tick(999);
  await manager.reconcile(pods);
  assert.equal(creates(), 1, "retry waits 1s");
  clock.tick(1);
  await manager.reconcile(pods);
  assert.equal(creates(), 2);
  clock.tick(1999);
  await manager.reconcile(pods);
  assert.equal(creates(), 2, "second retry waits 2s");
  clock.tick(1);
  await manager.reconcile(pods);
  assert.equal(creates(), 3);
  assert.ok(api.pods.has(ETCD_PATH));
});

Deno.test("MirrorPodManager.reconcile() folds calls made during a pass into one more pass", async () => {
  const { api, manager } = setup();
  manager.setMirrorPods([]);
  const first = manager.reconcile([staticPod("etcd", "h1")]);
  const second = manager.reconcile([staticPod("etcd", "h1"), staticPod("sched", "h3")]);
  const third = manager.reconcile([staticPod("etcd", "h1"), staticPod("sched", "h3")]);
  await Promise.all([first, second, third]);
  assert.deepEqual(api.calls, [
    "create /api/v1/namespaces/kube-system/pods",
    "create /api/v1/namespaces/kube-system/pods",
  ]);
  assert.deepEqual([...api.pods.keys()].sort(), [
    ETCD_PATH,
    "/api/v1/namespaces/kube-system/pods/sched-node1",
  ]);
});

Deno.test("MirrorPodManager.reconcile() waits for the watch when the UID precondition fails", async () => {
  const { api, manager } = setup();
  const stale = buildMirrorPod(staticPod("etcd", "h1"), { name: "node1", uid: "node-uid" });
  stale.metadata.uid = "gone-uid";
  // The apiserver already holds a newer mirror pod under the name.
  api.add(buildMirrorPod(staticPod("etcd", "h2"), { name: "node1", uid: "node-uid" }));
  await manager.reconcile([staticPod("etcd", "h2")], [stale]);
  assert.deepEqual(api.calls, [`delete ${ETCD_PATH}`]);
  assert.equal(api.pods.get(ETCD_PATH)!.metadata.annotations![MIRROR], "h2");
});

Deno.test("MirrorPodManager.stop() ends further passes", async () => {
  const { api, manager } = setup();
  manager.setMirrorPods([]);
  manager.stop();
  await manager.reconcile([staticPod("etcd", "h1")]);
  assert.deepEqual(api.calls, []);
});
