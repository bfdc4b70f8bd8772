import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import {
  InvalidPodError,
  makeStaticPod,
  staticPodName,
  staticPodsFromManifest,
  staticPodUID,
} from "../../lib/config/static_pod.ts";
import { applyPodDefaults } from "../../lib/api/defaults.ts";
import { ManifestError } from "../../lib/config/manifest.ts";

const NOW = Date.UTC(2026, 0, 1, 12);
const OPTS = { nodeName: "Node-1", source: "file", origin: "/etc/k/web.yaml", now: NOW } as const;

function manifest(): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "web", labels: { app: "web" } },
    spec: { containers: [{ name: "web", image: "nginx:1.25" }] },
  };
}

Deno.test("makeStaticPod() names the pod after the lowercased node and sets the node", () => {
  const pod = makeStaticPod(manifest(), OPTS);
  assert.equal(pod.metadata.name, "web-node-1");
  assert.equal(pod.metadata.namespace, "default");
  assert.equal(pod.spec.nodeName, "Node-1");
  assert.equal(pod.status?.phase, "Pending");
  assert.equal(staticPodName("api", "MyHost"), "api-myhost");
});

Deno.test("makeStaticPod() annotates source, hash (the UID) and seen time", () => {
  const pod = makeStaticPod(manifest(), OPTS);
  const a = pod.metadata.annotations!;
  assert.match(pod.metadata.uid!, /^[0-9a-f]{32}$/);
  assert.equal(a["kubernetes.io/config.hash"], pod.metadata.uid);
  assert.equal(a["kubernetes.io/config.source"], "file");
  assert.equal(a["kubernetes.io/config.seen"], "2026-01-01T12:00:00.000Z");
});

Deno.test("makeStaticPod() keeps the UID for unchanged content whatever the key order", () => {
  const first = makeStaticPod(manifest(), OPTS);
  const reordered: Pod = {
    spec: { containers: [{ image: "nginx:1.25", name: "web" }] },
    metadata: { labels: { app: "web" }, name: "web" },
    kind: "Pod",
    apiVersion: "v1",
  };
  const again = makeStaticPod(reordered, { ...OPTS, now: NOW + 60_000 });
  assert.equal(again.metadata.uid, first.metadata.uid);
});

Deno.test("makeStaticPod() derives a new UID from changed content, path or node", () => {
  const base = makeStaticPod(manifest(), OPTS).metadata.uid;
  const edited = manifest();
  edited.spec.containers[0]!.image = "nginx:1.26";
  const uids = new Set([
    base,
    makeStaticPod(edited, OPTS).metadata.uid,
    makeStaticPod(manifest(), { ...OPTS, origin: "/etc/k/other.yaml" }).metadata.uid,
    makeStaticPod(manifest(), { ...OPTS, nodeName: "node-2" }).metadata.uid,
    makeStaticPod(manifest(), { ...OPTS, source: "http" }).metadata.uid,
  ]);
  assert.equal(uids.size, 5);
});

Deno.test("makeStaticPod() keeps a UID written in the manifest", () => {
  const m = manifest();
  m.metadata.uid = "1234-abcd";
  const pod = makeStaticPod(m, OPTS);
  assert.equal(pod.metadata.uid, "1234-abcd");
  assert.equal(pod.metadata.annotations!["kubernetes.io/config.hash"], "1234-abcd");
});

Deno.test("staticPodUID() hashes the defaulted pod with node and origin", () => {
  const defaulted = applyPodDefaults(manifest());
  const { uid, upstream } = staticPodUID(defaulted, "", OPTS);
  assert.equal(uid, makeStaticPod(manifest(), OPTS).metadata.uid);
  assert.equal(upstream, true);
});

Deno.test("makeStaticPod() gives file pods a NoExecute toleration, once", () => {
  const m = manifest();
  m.spec.tolerations = [{ key: "gpu", operator: "Exists", effect: "NoSchedule" }, {
    operator: "Exists",
    effect: "NoExecute",
  }];
  assert.deepEqual(makeStaticPod(m, OPTS).spec.tolerations, [
    { key: "gpu", operator: "Exists", effect: "NoSchedule" },
    { operator: "Exists", effect: "NoExecute" },
  ]);
  assert.equal(makeStaticPod(manifest(), { ...OPTS, source: "http" }).spec.tolerations, undefined);
});

Deno.test("makeStaticPod() applies API defaults", () => {
  const pod = makeStaticPod(manifest(), OPTS);
  assert.equal(pod.spec.restartPolicy, "Always");
  assert.equal(pod.spec.containers[0]!.imagePullPolicy, "IfNotPresent");
});

Deno.test("makeStaticPod() throws InvalidPodError listing the field errors", () => {
  const m = manifest();
  m.spec.containers.push({ name: "web", image: "x" });
  assert.throws(() => makeStaticPod(m, OPTS), (err: unknown) => {
    assert.ok(err instanceof InvalidPodError);
    assert.deepEqual(err.errors, ['spec.containers[1].name: Duplicate value: "web"']);
    assert.match(err.message, /^invalid pod "web": /);
    return true;
  });
  const nameless = manifest();
  delete nameless.metadata.name;
  assert.throws(() => makeStaticPod(nameless, OPTS), /metadata\.name: Required value/);
});

Deno.test("makeStaticPod() does not modify the manifest pod", () => {
  const m = manifest();
  const before = structuredClone(m);
  makeStaticPod(m, OPTS);
  assert.deepEqual(m, before);
});

Deno.test("staticPodsFromManifest() names the file and document of an invalid pod", () => {
  const good =
    "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\n";
  const bad = good.replace("name: a", "name: b").replace(", image: i", "");
  assert.deepEqual(
    staticPodsFromManifest(good, OPTS).map((p) => p.metadata.name),
    ["a-node-1"],
  );
  assert.throws(() => staticPodsFromManifest(`${good}---\n${bad}`, OPTS), (err: unknown) => {
    assert.ok(err instanceof ManifestError);
    assert.ok(err.cause instanceof InvalidPodError);
    assert.equal(
      err.message,
      'manifest "/etc/k/web.yaml" document 2: invalid pod "b": spec.containers[0].image: Required value',
    );
    return true;
  });
});

Deno.test("staticPodsFromManifest() accepts a PodList only from http", () => {
  const list = JSON.stringify({ apiVersion: "v1", kind: "PodList", items: [manifest()] });
  assert.equal(staticPodsFromManifest(list, { ...OPTS, source: "http" }).length, 1);
  assert.throws(() => staticPodsFromManifest(list, OPTS), /kind is "PodList"/);
});

Deno.test("makeStaticPod() refuses ephemeral containers, as upstream refuses them on create", () => {
  const m = manifest();
  m.spec.ephemeralContainers = [{ name: "dbg", image: "busybox", targetContainerName: "web" }];
  assert.throws(() => makeStaticPod(m, OPTS), (err: unknown) => {
    assert.ok(err instanceof InvalidPodError);
    assert.deepEqual(err.errors, ["spec.ephemeralContainers: Forbidden: cannot be set on create"]);
    return true;
  });
});

// Found by the fuzz suite (tests/fuzz/manifest_test.ts): a null toleration passed
// validation and then threw a TypeError out of the NoExecute toleration merge.
Deno.test("staticPodsFromManifest() refuses a null toleration with a ManifestError naming it", () => {
  const text = JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "mnf" },
    spec: { containers: [{ name: "c", image: "busybox" }], tolerations: [null] },
  });
  assert.throws(
    () => staticPodsFromManifest(text, OPTS),
    (err) =>
      err instanceof ManifestError &&
      err.message.includes("spec.tolerations[0]: Invalid value: null: must be an object"),
  );
});
