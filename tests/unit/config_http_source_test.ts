import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { HttpSource } from "../../lib/config/http_source.ts";
import type { SourceError } from "../../lib/config/types.ts";
import { FakeClock } from "../../lib/util/clock.ts";

function podDoc(name: string, image = "busybox:1.36") {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name },
    spec: { containers: [{ name: "main", image }] },
  };
}

/** A local manifest server whose response the test sets, recording request headers. */
function serve() {
  const state = { status: 200, body: "", headers: [] as Headers[] };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (req) => {
      state.headers.push(req.headers);
      return new Response(state.body, { status: state.status });
    },
  );
  const url = `http://127.0.0.1:${server.addr.port}/manifests`;
  return { state, url, close: () => server.shutdown() };
}

function harness(headers?: HeadersInit) {
  const srv = serve();
  const clock = new FakeClock();
  const sets: Pod[][] = [];
  const errors: SourceError[] = [];
  const source = new HttpSource({
    url: srv.url,
    nodeName: "Node1",
    clock,
    ...(headers ? { headers } : {}),
    onPods: (pods) => sets.push(pods),
    onError: (e) => errors.push(e),
  });
  const tick = async () => {
    clock.tick(20_000);
    await source.poll();
  };
  const names = () => (sets.at(-1) ?? []).map((p) => p.metadata.name);
  const cleanup = async () => {
    source.stop();
    await srv.close();
  };
  return { srv, clock, sets, errors, source, tick, names, cleanup };
}

Deno.test("HttpSource reads a single pod and sends custom headers", async () => {
  const h = harness({ "X-Token": "abc" });
  try {
    h.srv.state.body = JSON.stringify(podDoc("web"));
    await h.source.start();
    assert.deepEqual(h.names(), ["web-node1"]);
    const pod = h.sets[0]![0]!;
    assert.equal(pod.metadata.annotations!["kubernetes.io/config.source"], "http");
    assert.equal(pod.spec.nodeName, "Node1");
    assert.equal(h.srv.state.headers[0]!.get("x-token"), "abc");
  } finally {
    await h.cleanup();
  }
});

Deno.test("HttpSource reads a PodList and multi-document YAML", async () => {
  const h = harness();
  try {
    h.srv.state.body = JSON.stringify({
      apiVersion: "v1",
      kind: "PodList",
      items: [podDoc("a"), podDoc("b")],
    });
    await h.source.start();
    assert.deepEqual(h.names(), ["a-node1", "b-node1"]);
    h.srv.state.body = "apiVersion: v1\nkind: Pod\nmetadata: {name: c}\n" +
      "spec: {containers: [{name: m, image: busybox}]}\n---\n" +
      "apiVersion: v1\nkind: Pod\nmetadata: {name: d}\n" +
      "spec: {containers: [{name: m, image: busybox}]}\n";
    await h.tick();
    assert.deepEqual(h.names(), ["c-node1", "d-node1"]);
  } finally {
    await h.cleanup();
  }
});

Deno.test("HttpSource sends nothing when the body is unchanged", async () => {
  const h = harness();
  try {
    h.srv.state.body = JSON.stringify(podDoc("web"));
    await h.source.start();
    await h.tick();
    await h.tick();
    assert.equal(h.srv.state.headers.length, 3, "it polled three times");
    assert.equal(h.sets.length, 1);
  } finally {
    await h.cleanup();
  }
});

Deno.test("HttpSource keeps the last good set on HTTP errors and bad bodies", async () => {
  const h = harness();
  try {
    h.srv.state.body = JSON.stringify(podDoc("web"));
    await h.source.start();
    h.srv.state.status = 500;
    h.srv.state.body = "boom";
    await h.tick();
    assert.match(h.errors.at(-1)!.reason, /: 500 Internal Server Error$/);
    h.srv.state.status = 200;
    h.srv.state.body = JSON.stringify(podDoc("Bad_Name"));
    await h.tick();
    assert.match(
      h.errors.at(-1)!.reason,
      /document 1: invalid pod "Bad_Name": metadata\.name: Invalid value: "Bad_Name"/,
    );
    h.srv.state.body = JSON.stringify({ apiVersion: "v1", kind: "Service" });
    await h.tick();
    assert.match(h.errors.at(-1)!.reason, /kind is "Service", want "Pod" or "PodList"/);
    assert.equal(h.errors.length, 3);
    assert.ok(h.errors.every((e) => e.source === "http" && e.file === h.srv.url));
    assert.equal(h.sets.length, 1, "no set replaced the last good one");
  } finally {
    await h.cleanup();
  }
});

Deno.test("HttpSource sends an empty set for an empty body and reports it", async () => {
  const h = harness();
  try {
    await h.source.start();
    assert.deepEqual(h.sets, [[]]);
    assert.match(h.errors[0]!.reason, /^zero-length data received from http:\/\/127\.0\.0\.1/);
  } finally {
    await h.cleanup();
  }
});

Deno.test("HttpSource reports an unreachable URL without throwing", async () => {
  const srv = serve();
  await srv.close();
  const errors: SourceError[] = [];
  const source = new HttpSource({
    url: srv.url,
    nodeName: "n",
    clock: new FakeClock(),
    onPods: () => assert.fail("no pods expected"),
    onError: (e) => errors.push(e),
  });
  await source.start();
  source.stop();
  assert.equal(errors.length, 1);
  assert.match(errors[0]!.reason, /^request failed: /);
});

Deno.test("HttpSource keeps a pod's UID while the body is unchanged in content", async () => {
  const h = harness();
  try {
    h.srv.state.body = JSON.stringify(podDoc("web"));
    await h.source.start();
    const uid = h.sets[0]![0]!.metadata.uid;
    h.srv.state.body = JSON.stringify(podDoc("web")) + "\n";
    await h.tick();
    assert.equal(h.sets.length, 2);
    assert.equal(h.sets[1]![0]!.metadata.uid, uid);
    h.srv.state.body = JSON.stringify(podDoc("web", "busybox:1.37"));
    await h.tick();
    assert.notEqual(h.sets[2]![0]!.metadata.uid, uid);
  } finally {
    await h.cleanup();
  }
});
