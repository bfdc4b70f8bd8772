import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { startApiSource } from "../../lib/config/api_source.ts";
import { PodConfig } from "../../lib/config/mux.ts";
import { startPodSources } from "../../lib/config/sources.ts";
import type { PodUpdate } from "../../lib/config/types.ts";
import {
  ApiError,
  type CallOptions,
  type KubeClient,
  type ObjectList,
  type WatchEvent,
  WatchStreamError,
} from "../../lib/kubeapi/types.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { flush, flushUntil, testPod } from "../kit/mod.ts";

/** A watch the test drives: send events, end the stream or fail it. */
interface FakeWatch {
  query: Record<string, string>;
  signal: AbortSignal;
  send(event: WatchEvent<Pod>): void;
  end(): void;
  fail(err: unknown): void;
}

/**
 * An apiserver for the pod source: lists answer from `pods` at `rv` (or the
 * next queued error), watches are handed to the test.
 */
class FakeApi implements KubeClient {
  pods: Pod[] = [];
  rv = "10";
  listErrors: unknown[] = [];
  lists: Record<string, string>[] = [];
  watches: FakeWatch[] = [];

  list<T>(path: string, opts?: CallOptions): Promise<ObjectList<T>> {
    assert.equal(path, "/api/v1/pods");
    this.lists.push({ ...opts?.query });
    const err = this.listErrors.shift();
    if (err !== undefined) return Promise.reject(err);
    return Promise.resolve({
      items: structuredClone(this.pods) as T[],
      metadata: { resourceVersion: this.rv },
    });
  }

  watch<T>(
    path: string,
    onEvent: (event: WatchEvent<T>) => void,
    opts?: CallOptions,
  ): Promise<void> {
    assert.equal(path, "/api/v1/pods");
    const signal = opts!.signal!;
    return new Promise((resolve, reject) => {
      signal.addEventListener("abort", () => resolve(), { once: true });
      this.watches.push({
        query: { ...opts?.query },
        signal,
        send: (event) => onEvent(structuredClone(event) as WatchEvent<T>),
        end: () => resolve(),
        fail: reject,
      });
    });
  }

  get<T>(): Promise<T> {
    throw new Error("not used");
  }
  create<T>(): Promise<T> {
    throw new Error("not used");
  }
  update<T>(): Promise<T> {
    throw new Error("not used");
  }
  patch<T>(): Promise<T> {
    throw new Error("not used");
  }
  delete(): Promise<void> {
    throw new Error("not used");
  }
  close(): void {}

  get lastWatch(): FakeWatch {
    return this.watches.at(-1)!;
  }
}

function apiPod(name: string, rv: string, extra: Partial<Pod["metadata"]> = {}): Pod {
  return testPod({
    name,
    uid: `uid-${name}`,
    containers: ["c"],
    metadata: { resourceVersion: rv, ...extra },
    spec: { nodeName: "node1" },
  });
}

/** Starts a source on a fresh fake; `prepare` fills the fake before the first list. */
function setup(opts: { random?: number; prepare?: (api: FakeApi) => void } = {}) {
  const api = new FakeApi();
  opts.prepare?.(api);
  const clock = new FakeClock();
  const sets: string[][] = [];
  const source = startApiSource({
    client: api,
    nodeName: "node1",
    clock,
    random: () => opts.random ?? 0,
    onPods: (pods) => sets.push(pods.map((p) => p.metadata.name!).sort()),
  });
  return { api, clock, sets, source };
}

Deno.test("startApiSource() lists the node's pods, then watches from the list's resourceVersion", async () => {
  const { api, sets, source } = setup({
    random: 0.5,
    prepare: (api) => (api.pods = [apiPod("a", "5")]),
  });
  assert.equal(source.hasSynced(), false);
  await source.synced;
  assert.equal(source.hasSynced(), true);
  assert.deepEqual(api.lists, [{ fieldSelector: "spec.nodeName=node1", resourceVersion: "0" }]);
  assert.deepEqual(sets, [["a"]]);
  await flushUntil("the watch", () => api.watches.length === 1);
  assert.deepEqual(api.lastWatch.query, {
    fieldSelector: "spec.nodeName=node1",
    allowWatchBookmarks: "true",
    resourceVersion: "10",
    timeoutSeconds: "450",
  });
  source.stop();
  await source.done;
});

Deno.test("startApiSource() sends the complete set after adds, updates and deletes, once per burst", async () => {
  const { api, sets, source } = setup();
  await source.synced;
  await flushUntil("the watch", () => api.watches.length === 1);
  const w = api.lastWatch;
  w.send({ type: "ADDED", object: apiPod("b", "11") });
  w.send({ type: "ADDED", object: apiPod("c", "12") });
  await flushUntil("the first burst", () => sets.length === 2);
  const updated = apiPod("b", "13", { labels: { v: "2" } });
  w.send({ type: "MODIFIED", object: updated });
  await flushUntil("the update", () => sets.length === 3);
  w.send({ type: "DELETED", object: apiPod("c", "14") });
  await flushUntil("the delete", () => sets.length === 4);
  assert.deepEqual(sets, [[], ["b", "c"], ["b", "c"], ["b"]]);
  assert.equal(source.resourceVersion(), "14");
  source.stop();
  await source.done;
});

Deno.test("startApiSource() follows bookmarks and re-watches from there when the stream ends", async () => {
  const { api, clock, sets, source } = setup();
  await source.synced;
  await flushUntil("the watch", () => api.watches.length === 1);
  api.lastWatch.send({ type: "BOOKMARK", object: { metadata: { resourceVersion: "42" } } as Pod });
  assert.equal(source.resourceVersion(), "42");
  clock.tick(300_000);
  api.lastWatch.end();
  await flushUntil("the second watch", () => api.watches.length === 2);
  assert.equal(api.lastWatch.query.resourceVersion, "42");
  assert.equal(api.lists.length, 1, "a normal end must not relist");
  assert.equal(sets.length, 1, "a bookmark changes no pod");
  source.stop();
  await source.done;
});

Deno.test("startApiSource() relists after a 410 ERROR event and drops pods gone meanwhile", async () => {
  const { api, clock, sets, source } = setup({
    prepare: (api) => (api.pods = [apiPod("a", "5"), apiPod("b", "6")]),
  });
  await source.synced;
  await flushUntil("the watch", () => api.watches.length === 1);
  const first = api.lastWatch;
  first.send({ type: "MODIFIED", object: apiPod("a", "30") });
  first.send({
    type: "ERROR",
    object: { code: 410, reason: "Expired", message: "too old resource version" } as never,
  });
  assert.equal(first.signal.aborted, true, "the source stops reading after ERROR");
  api.pods = [apiPod("a", "40")];
  api.rv = "50";
  await flushUntil("the backoff timer", () => clock.pendingTimers === 1);
  clock.tick(799);
  assert.equal(api.lists.length, 1);
  clock.tick(1);
  await flushUntil("the relist", () => api.lists.length === 2);
  assert.equal(api.lists[1]!.resourceVersion, "30", "relist at least as fresh as last seen");
  await flushUntil("the new watch", () => api.watches.length === 2);
  assert.equal(api.lastWatch.query.resourceVersion, "50");
  assert.deepEqual(sets.at(-1), ["a"]);
  source.stop();
  await source.done;
});

Deno.test("startApiSource() relists when the watch request itself answers 410 Gone", async () => {
  const { api, clock, source } = setup();
  await source.synced;
  await flushUntil("the watch", () => api.watches.length === 1);
  api.lastWatch.fail(new ApiError("too old resource version", 410, "Expired"));
  await flushUntil("the backoff timer", () => clock.pendingTimers === 1);
  clock.tick(800);
  await flushUntil("the relist", () => api.lists.length === 2);
  source.stop();
  await source.done;
});

Deno.test("startApiSource() backs off 800ms doubling to 30s with jitter while the list fails", async () => {
  const down = new Error("GET /api/v1/pods: connection refused");
  const { api, clock, source } = setup({
    random: 0.5,
    prepare: (api) => (api.listErrors = Array(9).fill(down)),
  });
  // base × 1.5 (jitter 0.5), base doubling from 800ms and capped at 30s.
  const gaps = [1200, 2400, 4800, 9600, 19200, 38400, 45000, 45000, 45000];
  for (const [i, gap] of gaps.entries()) {
    await flushUntil(
      `list ${i + 1}`,
      () => api.lists.length === i + 1 && clock.pendingTimers === 1,
    );
    clock.tick(gap - 1);
    await flush();
    assert.equal(api.lists.length, i + 1, `list ${i + 2} came before ${gap}ms`);
    clock.tick(1);
  }
  assert.equal(source.hasSynced(), false);
  await flushUntil("recovery", () => api.lists.length === 10 && api.watches.length === 1);
  assert.equal(source.hasSynced(), true);
  source.stop();
  await source.done;
});

Deno.test("startApiSource() lists from etcd after a list answered 410", async () => {
  const { api, clock, source } = setup({
    prepare: (api) => (api.listErrors = [new ApiError("too old resource version", 410, "Expired")]),
  });
  await flushUntil("the backoff timer", () => clock.pendingTimers === 1);
  clock.tick(800);
  await source.synced;
  assert.deepEqual(api.lists.map((q) => q.resourceVersion), ["0", undefined]);
  source.stop();
  await source.done;
});

Deno.test("startApiSource() re-watches from the same resourceVersion after a connection error", async () => {
  const { api, clock, source } = setup();
  await source.synced;
  await flushUntil("the watch", () => api.watches.length === 1);
  api.lastWatch.send({ type: "BOOKMARK", object: { metadata: { resourceVersion: "20" } } as Pod });
  api.lastWatch.fail(new Error("GET /api/v1/pods: connection reset"));
  await flushUntil("the backoff timer", () => clock.pendingTimers === 1);
  clock.tick(800);
  await flushUntil("the second watch", () => api.watches.length === 2);
  assert.equal(api.lastWatch.query.resourceVersion, "20");
  assert.equal(api.lists.length, 1);
  source.stop();
  await source.done;
});

Deno.test("startApiSource() re-watches at once, without a relist, when an open watch's stream breaks", async () => {
  const { api, clock, sets, source } = setup();
  await source.synced;
  await flushUntil("the watch", () => api.watches.length === 1);
  api.lastWatch.send({ type: "ADDED", object: apiPod("b", "21") });
  // A reset or a proxy cutting the stream after a while: the end of the stream, as upstream
  // takes it, not a failure to back off from.
  clock.tick(5_000);
  api.lastWatch.fail(new WatchStreamError("GET /api/v1/pods (watch): stream broke: reset"));
  await flushUntil("the second watch", () => api.watches.length === 2);
  assert.equal(clock.pendingTimers, 0, "no backoff step before the second watch");
  assert.equal(api.lastWatch.query.resourceVersion, "21");
  assert.equal(api.lists.length, 1, "a broken stream must not relist");
  assert.deepEqual(sets.at(-1), ["b"]);
  // Broken at once and without an event, it counts as a failure again.
  api.lastWatch.fail(new WatchStreamError("GET /api/v1/pods (watch): stream broke: reset"));
  await flushUntil("the backoff timer", () => clock.pendingTimers === 1);
  source.stop();
  await source.done;
});

Deno.test("startApiSource() relists after a forbidden watch and a watch that closes at once", async () => {
  const { api, clock, source } = setup();
  await source.synced;
  await flushUntil("the watch", () => api.watches.length === 1);
  api.lastWatch.fail(new ApiError("pods is forbidden", 403, "Forbidden"));
  await flushUntil("the backoff timer", () => clock.pendingTimers === 1);
  clock.tick(800);
  await flushUntil("relist and watch", () => api.lists.length === 2 && api.watches.length === 2);
  // Closed within a second and no event: a misbehaving server, not a normal end.
  api.lastWatch.end();
  await flushUntil("the second backoff", () => clock.pendingTimers === 1);
  clock.tick(1600);
  await flushUntil("the second relist", () => api.lists.length === 3);
  source.stop();
  await source.done;
});

Deno.test("ApiSource.stop() aborts the watch in flight and ends the loop", async () => {
  const { api, source } = setup();
  await source.synced;
  await flushUntil("the watch", () => api.watches.length === 1);
  source.stop();
  assert.equal(api.lastWatch.signal.aborted, true);
  await source.done;
  assert.equal(api.watches.length, 1);
});

Deno.test("startApiSource() keeps watching when the pod sink throws", async () => {
  const api = new FakeApi();
  let calls = 0;
  const source = startApiSource({
    client: api,
    nodeName: "node1",
    clock: new FakeClock(),
    onPods: () => {
      calls++;
      throw new Error("sink bug");
    },
  });
  await source.synced;
  await flushUntil("the watch", () => api.watches.length === 1);
  api.lastWatch.send({ type: "ADDED", object: apiPod("a", "11") });
  await flushUntil("the second set", () => calls === 2);
  assert.equal(api.lastWatch.signal.aborted, false);
  source.stop();
  await source.done;
});

function mirror(name: string): Pod {
  return apiPod(name, "7", { annotations: { "kubernetes.io/config.mirror": "hash-1" } });
}

Deno.test("PodConfig.set() hands api mirror pods to onMirrorPods and never as pod updates", () => {
  const mirrorSets: string[][] = [];
  const updates: PodUpdate[] = [];
  const config = new PodConfig({
    clock: new FakeClock(),
    onUpdate: (u) => updates.push(u),
    onMirrorPods: (pods) => mirrorSets.push(pods.map((p) => p.metadata.name!)),
  });
  config.set("api", [apiPod("a", "1"), mirror("static-node1")]);
  config.set("api", [apiPod("a", "1")]);
  assert.deepEqual(updates.map((u) => `${u.op} ${u.pods.map((p) => p.metadata.name)}`), [
    "ADD a",
  ]);
  assert.deepEqual(mirrorSets, [["static-node1"], []]);
  assert.deepEqual(config.mergedState().map((p) => p.metadata.name), ["a"]);
  assert.deepEqual(config.mirrorPods(), []);
});

Deno.test("PodConfig.set() turns an api pod's deletionTimestamp into DELETE and its disappearance into REMOVE", () => {
  const updates: PodUpdate[] = [];
  const config = new PodConfig({ clock: new FakeClock(), onUpdate: (u) => updates.push(u) });
  config.set("api", [apiPod("a", "1")]);
  const deleting = apiPod("a", "2", {
    deletionTimestamp: "2026-01-01T00:00:30Z",
    deletionGracePeriodSeconds: 30,
  });
  config.set("api", [deleting]);
  config.set("api", []);
  assert.deepEqual(updates.map((u) => u.op), ["ADD", "DELETE", "REMOVE"]);
  const del = updates[1]!.pods[0]!;
  assert.equal(del.metadata.deletionGracePeriodSeconds, 30);
  assert.equal(del.metadata.deletionTimestamp, "2026-01-01T00:00:30Z");
  // The kubelet's first-seen stamp survives into the DELETE.
  assert.equal(del.metadata.annotations!["kubernetes.io/config.seen"], "2026-01-01T00:00:00.000Z");
});

Deno.test("startPodSources() with a client feeds api pods through the mux and mirror pods aside", async () => {
  const api = new FakeApi();
  api.pods = [apiPod("web", "3"), mirror("etcd-node1")];
  const updates: PodUpdate[] = [];
  const mirrorSets: string[][] = [];
  const sources = startPodSources({
    nodeName: "node1",
    podManifestPath: "",
    manifestUrl: "",
    client: api,
    clock: new FakeClock(),
    onUpdate: (u) => updates.push(u),
    onMirrorPods: (pods) => mirrorSets.push(pods.map((p) => p.metadata.name!)),
  });
  assert.deepEqual(sources.config.sources(), ["api"]);
  assert.equal(sources.seenAllSources(), false);
  await sources.ready;
  assert.equal(sources.seenAllSources(), true);
  assert.deepEqual(
    updates.map((u) => `${u.source} ${u.op} ${u.pods.map((p) => p.metadata.name)}`),
    [
      "api ADD web",
    ],
  );
  assert.deepEqual(mirrorSets, [["etcd-node1"]]);
  await flushUntil("the watch", () => api.watches.length === 1);
  api.lastWatch.send({
    type: "MODIFIED",
    object: apiPod("web", "4", { deletionTimestamp: "2026-01-01T00:01:00Z" }),
  });
  await flushUntil("the DELETE", () => updates.length === 2);
  assert.equal(updates[1]!.op, "DELETE");
  sources.stop();
  assert.equal(api.lastWatch.signal.aborted, true);
});
