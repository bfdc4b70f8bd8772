import assert from "node:assert/strict";
import { ManifestError, MAX_MANIFEST_DEPTH, parseManifest } from "../../lib/config/manifest.ts";

const POD_A = `apiVersion: v1
kind: Pod
metadata:
  name: a
spec:
  containers:
  - name: c
    image: busybox
`;
const POD_B = POD_A.replace("name: a", "name: b");

Deno.test("parseManifest() reads a single YAML pod", () => {
  const pods = parseManifest(POD_A, { file: "/m/a.yaml" });
  assert.equal(pods.length, 1);
  assert.equal(pods[0]!.metadata.name, "a");
  assert.equal(pods[0]!.spec.containers[0]!.image, "busybox");
});

Deno.test("parseManifest() reads several documents and skips empty ones", () => {
  const text = `---\n${POD_A}---\n---\n# only a comment\n---\n${POD_B}`;
  const pods = parseManifest(text, { file: "/m/ab.yaml" });
  assert.deepEqual(pods.map((p) => p.metadata.name), ["a", "b"]);
});

Deno.test("parseManifest() reads JSON", () => {
  const json = JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "j" },
    spec: { containers: [{ name: "c", image: "busybox" }] },
  });
  assert.equal(parseManifest(json, { file: "/m/j.json" })[0]!.metadata.name, "j");
});

Deno.test("parseManifest() returns nothing for an empty file", () => {
  assert.deepEqual(parseManifest("", { file: "/m/empty.yaml" }), []);
  assert.deepEqual(parseManifest("\n# nothing\n", { file: "/m/empty.yaml" }), []);
});

Deno.test("parseManifest() names the file and document of a wrong kind", () => {
  const text =
    `${POD_A}---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {}\n`;
  assert.throws(() => parseManifest(text, { file: "/m/mixed.yaml" }), (err: unknown) => {
    assert.ok(err instanceof ManifestError);
    assert.equal(err.file, "/m/mixed.yaml");
    assert.equal(err.document, 2);
    assert.equal(
      err.message,
      'manifest "/m/mixed.yaml" document 2: kind is "Deployment", want "Pod"',
    );
    return true;
  });
});

Deno.test("parseManifest() rejects a Pod of another apiVersion", () => {
  assert.throws(
    () => parseManifest(POD_A.replace("apiVersion: v1", "apiVersion: v2"), { file: "f" }),
    /document 1: apiVersion is "v2", want "v1"/,
  );
});

Deno.test("parseManifest() reports invalid YAML with the document index", () => {
  assert.throws(
    () => parseManifest(`${POD_A}---\nkind: Pod\n  bad: [indent\n`, { file: "/m/bad.yaml" }),
    /manifest "\/m\/bad\.yaml" document 2: invalid YAML/,
  );
});

Deno.test("parseManifest() rejects scalars and pods without spec", () => {
  assert.throws(() => parseManifest("just text", { file: "f" }), /document 1: not an object/);
  assert.throws(
    () => parseManifest("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", { file: "f" }),
    /spec is missing/,
  );
});

Deno.test("parseManifest() reads a PodList only when lists are allowed", () => {
  const list = {
    apiVersion: "v1",
    kind: "PodList",
    items: [
      { metadata: { name: "x" }, spec: { containers: [{ name: "c", image: "i" }] } },
      { metadata: { name: "y" }, spec: { containers: [{ name: "c", image: "i" }] } },
    ],
  };
  const text = JSON.stringify(list);
  const pods = parseManifest(text, { file: "http://x/", allowList: true });
  assert.deepEqual(pods.map((p) => [p.kind, p.apiVersion, p.metadata.name]), [
    ["Pod", "v1", "x"],
    ["Pod", "v1", "y"],
  ]);
  assert.throws(() => parseManifest(text, { file: "f" }), /kind is "PodList", want "Pod"/);
});

// Found by the fuzz suite (tests/fuzz/manifest_test.ts): these inputs threw a
// ReferenceError or a RangeError (stack overflow) instead of a ManifestError.
Deno.test("parseManifest() refuses an alias to an anchor set later with a ManifestError", () => {
  assert.throws(
    () => parseManifest(".nan<<: *a\n", { file: "/m/alias.yaml" }),
    (err) =>
      err instanceof ManifestError &&
      /"\/m\/alias\.yaml" document 1: invalid YAML/.test(err.message),
  );
});

Deno.test("parseManifest() refuses nesting deeper than MAX_MANIFEST_DEPTH, naming the field", () => {
  const nested = (depth: number, arrays: boolean) => {
    let v: unknown = "x";
    for (let i = 0; i < depth; i++) v = arrays ? [v] : { a: v };
    return v;
  };
  const pod = (v: unknown) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p" },
    spec: { containers: [{ name: "c", image: "i" }], hostname: v },
  });
  // JSON.parse copes with any depth: the walks after it overflowed at ~5,000.
  assert.throws(
    () => parseManifest(JSON.stringify(pod(nested(5_000, false))), { file: "f" }),
    (err) =>
      err instanceof ManifestError &&
      /document 1: spec\.hostname\.a\.a\.a.*: nested deeper than 500 levels/.test(err.message),
  );
  assert.throws(
    () => parseManifest(JSON.stringify(pod(nested(600, true))), { file: "f" }),
    (err) => err instanceof ManifestError && /spec\.hostname\[0\]\[0\]/.test(err.message),
  );
  // The YAML parser itself recursed past the stack at ~2,000 levels of flow style.
  assert.throws(
    () => parseManifest(`# yaml\n${JSON.stringify(pod(nested(5_000, false)))}`, { file: "f" }),
    (err) => err instanceof ManifestError && /invalid YAML|nested deeper/.test(err.message),
  );
  assert.equal(
    parseManifest(JSON.stringify(pod(nested(MAX_MANIFEST_DEPTH - 3, false))), { file: "f" }).length,
    1,
  );
});
