import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { applyPodDefaults, defaultPullPolicy } from "../../lib/api/defaults.ts";

function pod(): Pod {
  return {
    metadata: { name: "web" },
    spec: {
      containers: [{
        name: "web",
        image: "nginx",
        ports: [{ containerPort: 80 }],
        resources: { limits: { cpu: "1", memory: "64Mi" }, requests: { cpu: "100m" } },
        livenessProbe: { httpGet: { port: 80 } },
        env: [{ name: "NODE", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } }],
      }],
      volumes: [{ name: "scratch" }, { name: "logs", hostPath: { path: "/var/log" } }],
    },
  };
}

Deno.test("applyPodDefaults() fills the pod-level defaults upstream applies", () => {
  const out = applyPodDefaults(pod());
  assert.equal(out.apiVersion, "v1");
  assert.equal(out.kind, "Pod");
  assert.equal(out.metadata.namespace, "default");
  assert.equal(out.spec.restartPolicy, "Always");
  assert.equal(out.spec.terminationGracePeriodSeconds, 30);
  assert.equal(out.spec.dnsPolicy, "ClusterFirst");
  assert.equal(out.spec.enableServiceLinks, true);
});

Deno.test("applyPodDefaults() fills container, port, probe and env defaults", () => {
  const c = applyPodDefaults(pod()).spec.containers[0]!;
  assert.equal(c.imagePullPolicy, "Always");
  assert.equal(c.terminationMessagePath, "/dev/termination-log");
  assert.equal(c.terminationMessagePolicy, "File");
  assert.equal(c.ports![0]!.protocol, "TCP");
  assert.equal(c.ports![0]!.hostPort, undefined);
  assert.deepEqual(c.livenessProbe, {
    httpGet: { port: 80, path: "/", scheme: "HTTP" },
    timeoutSeconds: 1,
    periodSeconds: 10,
    successThreshold: 1,
    failureThreshold: 3,
  });
  assert.equal(c.env![0]!.valueFrom!.fieldRef!.apiVersion, "v1");
});

Deno.test("applyPodDefaults() copies limits into missing requests", () => {
  const c = applyPodDefaults(pod()).spec.containers[0]!;
  assert.deepEqual(c.resources!.requests, { cpu: "100m", memory: "64Mi" });
});

Deno.test("applyPodDefaults() turns a source-less volume into an emptyDir", () => {
  const out = applyPodDefaults(pod());
  assert.deepEqual(out.spec.volumes, [
    { name: "scratch", emptyDir: {} },
    { name: "logs", hostPath: { path: "/var/log", type: "" } },
  ]);
});

Deno.test("applyPodDefaults() sets hostPort from containerPort on the host network", () => {
  const input = pod();
  input.spec.hostNetwork = true;
  assert.equal(applyPodDefaults(input).spec.containers[0]!.ports![0]!.hostPort, 80);
});

Deno.test("applyPodDefaults() keeps explicit values and does not modify its input", () => {
  const input = pod();
  input.metadata.namespace = "kube-system";
  input.spec.restartPolicy = "Never";
  input.spec.terminationGracePeriodSeconds = 0;
  input.spec.containers[0]!.imagePullPolicy = "Never";
  const before = structuredClone(input);
  const out = applyPodDefaults(input);
  assert.equal(out.metadata.namespace, "kube-system");
  assert.equal(out.spec.restartPolicy, "Never");
  assert.equal(out.spec.terminationGracePeriodSeconds, 0);
  assert.equal(out.spec.containers[0]!.imagePullPolicy, "Never");
  assert.deepEqual(input, before);
});

Deno.test("defaultPullPolicy() is Always for latest or no tag, else IfNotPresent", () => {
  assert.equal(defaultPullPolicy("nginx"), "Always");
  assert.equal(defaultPullPolicy("nginx:latest"), "Always");
  assert.equal(defaultPullPolicy("registry:5000/nginx"), "Always");
  assert.equal(defaultPullPolicy("registry:5000/nginx:1.25"), "IfNotPresent");
  assert.equal(defaultPullPolicy("nginx:1.25"), "IfNotPresent");
  assert.equal(defaultPullPolicy("nginx@sha256:" + "a".repeat(64)), "IfNotPresent");
});
