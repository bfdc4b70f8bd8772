import assert from "node:assert/strict";
import {
  ConfigAnnotations,
  formatPod,
  isMirrorPod,
  isRestartableInitContainer,
  isStaticPod,
  podKey,
  restartPolicyOf,
} from "../../lib/api/mod.ts";
import type { Pod } from "../../lib/api/types.ts";
import { testPod } from "../kit/mod.ts";

/** Pod "web" (uid "u1"); its namespace stays unset unless given, for the "default" fallback. */
function pod(annotations?: Record<string, string>, namespace?: string): Pod {
  const p = testPod({ containers: ["c"], metadata: annotations ? { annotations } : {} });
  if (namespace) p.metadata.namespace = namespace;
  else delete p.metadata.namespace;
  return p;
}

Deno.test("podKey() is namespace/name, with an unset namespace as default", () => {
  assert.equal(podKey(pod(undefined, "kube-system")), "kube-system/web");
  assert.equal(podKey(pod()), "default/web");
  assert.equal(podKey({ name: "etcd", namespace: "kube-system" }), "kube-system/etcd");
  assert.equal(podKey({ name: "etcd" }), "default/etcd");
  // An apiserver object the mux has not checked yet may lack metadata.
  assert.equal(podKey({} as Pod), "default/");
});

Deno.test("isStaticPod() is true for the file and http sources, not for api or none", () => {
  assert.equal(isStaticPod(pod({ [ConfigAnnotations.source]: "file" })), true);
  assert.equal(isStaticPod(pod({ [ConfigAnnotations.source]: "http" })), true);
  assert.equal(isStaticPod(pod({ [ConfigAnnotations.source]: "api" })), false);
  assert.equal(isStaticPod(pod()), false);
});

Deno.test("isMirrorPod() looks for the config.mirror annotation only", () => {
  assert.equal(isMirrorPod(pod({ "kubernetes.io/config.mirror": "h1" })), true);
  assert.equal(isMirrorPod(pod({ [ConfigAnnotations.source]: "file" })), false);
  assert.equal(isMirrorPod({} as Pod), false);
});

Deno.test("restartPolicyOf() defaults to Always; only restartPolicy Always makes a sidecar", () => {
  assert.equal(restartPolicyOf(pod()), "Always");
  assert.equal(
    restartPolicyOf({ ...pod(), spec: { ...pod().spec, restartPolicy: "Never" } }),
    "Never",
  );
  assert.equal(
    isRestartableInitContainer({ name: "s", image: "i", restartPolicy: "Always" }),
    true,
  );
  assert.equal(isRestartableInitContainer({ name: "i", image: "i" }), false);
});

Deno.test("formatPod() writes upstream's name_namespace(uid) for a pod or its identity", () => {
  assert.equal(formatPod(pod(undefined, "ns")), "web_ns(u1)");
  assert.equal(formatPod(pod()), "web_default(u1)");
  assert.equal(formatPod({ name: "web", namespace: "ns", uid: "u2" }), "web_ns(u2)");
});
