import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { NamespaceMode, ProfileType, Protocol } from "../../lib/cri/types.ts";
import { generatePodSandboxConfig } from "../../lib/kuberuntime/sandbox_config.ts";
import { testPod } from "../kit/mod.ts";

function basePod(mutate: (p: Pod) => void = () => {}): Pod {
  const pod = testPod({
    namespace: "prod",
    uid: "1234-abcd",
    containers: ["c"],
    metadata: { labels: { app: "web" }, annotations: { note: "x" } },
  });
  mutate(pod);
  return pod;
}

Deno.test("generatePodSandboxConfig() gives a host-network pod no hostname and the NODE network", () => {
  const cfg = generatePodSandboxConfig(basePod((p) => (p.spec.hostNetwork = true)));
  assert.equal(cfg.hostname, undefined);
  assert.equal(cfg.linux?.securityContext?.namespaceOptions?.network, NamespaceMode.NODE);
  assert.equal(cfg.linux?.securityContext?.namespaceOptions?.ipc, NamespaceMode.POD);
  assert.equal(cfg.linux?.securityContext?.namespaceOptions?.pid, NamespaceMode.CONTAINER);
});

Deno.test("generatePodSandboxConfig() sets the hostname and POD network for a pod-network pod", () => {
  const cfg = generatePodSandboxConfig(basePod((p) => (p.spec.hostname = "myhost")));
  assert.equal(cfg.hostname, "myhost");
  assert.equal(cfg.linux?.securityContext?.namespaceOptions?.network, NamespaceMode.POD);
});

Deno.test("generatePodSandboxConfig() uses NODE pid/ipc for hostPID/hostIPC pods", () => {
  const cfg = generatePodSandboxConfig(basePod((p) => {
    p.spec.hostPID = true;
    p.spec.hostIPC = true;
  }));
  assert.equal(cfg.linux?.securityContext?.namespaceOptions?.pid, NamespaceMode.NODE);
  assert.equal(cfg.linux?.securityContext?.namespaceOptions?.ipc, NamespaceMode.NODE);
});

Deno.test("generatePodSandboxConfig() writes metadata, log directory, labels and annotations", () => {
  const cfg = generatePodSandboxConfig(basePod(), { podLogsDir: "/logs/", attempt: 3 });
  assert.deepEqual(cfg.metadata, { name: "web", namespace: "prod", uid: "1234-abcd", attempt: 3 });
  assert.equal(cfg.logDirectory, "/logs/prod_web_1234-abcd");
  assert.deepEqual(cfg.labels, {
    app: "web",
    "io.kubernetes.pod.name": "web",
    "io.kubernetes.pod.namespace": "prod",
    "io.kubernetes.pod.uid": "1234-abcd",
  });
  assert.deepEqual(cfg.annotations, { note: "x" });
  assert.equal(
    generatePodSandboxConfig(basePod()).logDirectory,
    "/var/log/pods/prod_web_1234-abcd",
  );
});

Deno.test("generatePodSandboxConfig() maps hostPorts and skips ports without one", () => {
  const cfg = generatePodSandboxConfig(basePod((p) => {
    p.spec.containers[0]!.ports = [
      { containerPort: 80, hostPort: 8080 },
      { containerPort: 53, hostPort: 5353, protocol: "UDP", hostIP: "127.0.0.1" },
      { containerPort: 9090 },
    ];
  }));
  assert.deepEqual(cfg.portMappings, [
    { protocol: Protocol.TCP, containerPort: 80, hostPort: 8080 },
    { protocol: Protocol.UDP, containerPort: 53, hostPort: 5353, hostIp: "127.0.0.1" },
  ]);
});

Deno.test("generatePodSandboxConfig() passes sysctls, run-as ids and fsGroup", () => {
  const cfg = generatePodSandboxConfig(basePod((p) => {
    p.spec.securityContext = {
      runAsUser: 1000,
      runAsGroup: 2000,
      supplementalGroups: [5],
      fsGroup: 7,
      sysctls: [{ name: "net.core.somaxconn", value: "1024" }],
    };
  }));
  assert.deepEqual(cfg.linux?.sysctls, { "net.core.somaxconn": "1024" });
  assert.deepEqual(cfg.linux?.securityContext?.runAsUser, { value: 1000 });
  assert.deepEqual(cfg.linux?.securityContext?.runAsGroup, { value: 2000 });
  assert.deepEqual(cfg.linux?.securityContext?.supplementalGroups, [7, 5]);
});

Deno.test("generatePodSandboxConfig() runs the sandbox under RuntimeDefault seccomp and the pod's SELinux options", () => {
  const plain = generatePodSandboxConfig(basePod());
  assert.deepEqual(plain.linux?.securityContext?.seccomp, {
    profileType: ProfileType.RuntimeDefault,
  });
  assert.equal(plain.linux?.securityContext?.selinuxOptions, undefined);
  const labelled = generatePodSandboxConfig(basePod((p) => {
    p.spec.securityContext = {
      seccompProfile: { type: "Unconfined" },
      seLinuxOptions: { type: "spc_t", level: "s0" },
    };
  }));
  assert.deepEqual(labelled.linux?.securityContext?.seccomp, {
    profileType: ProfileType.RuntimeDefault,
  });
  assert.deepEqual(labelled.linux?.securityContext?.selinuxOptions, {
    user: "",
    role: "",
    type: "spc_t",
    level: "s0",
  });
});

Deno.test("generatePodSandboxConfig() refuses hostUsers: false with upstream's error", () => {
  const pod = basePod((p) => (p.spec.hostUsers = false));
  assert.throws(
    () => generatePodSandboxConfig(pod),
    { message: "can't set `spec.hostUsers: false`, runtime does not support user namespaces" },
  );
  assert.throws(
    () => generatePodSandboxConfig(pod, { runtimeHandler: "kata" }),
    {
      message:
        'can\'t set `spec.hostUsers: false`, RuntimeClass handler "kata" does not support user namespaces',
    },
  );
  assert.ok(generatePodSandboxConfig(basePod((p) => (p.spec.hostUsers = true))));
});

Deno.test("generatePodSandboxConfig() passes the pod's DNS config through as formed", () => {
  const dnsConfig = { servers: ["10.96.0.10"], searches: ["prod.svc.cluster.local"], options: [] };
  assert.deepEqual(generatePodSandboxConfig(basePod(), { dnsConfig }).dnsConfig, dnsConfig);
  assert.equal(generatePodSandboxConfig(basePod()).dnsConfig, undefined);
});

Deno.test("generatePodSandboxConfig() sets the FQDN as hostname with setHostnameAsFQDN and a subdomain", () => {
  const opts = { clusterDomain: "cluster.local" };
  const pod = basePod((p) => {
    p.spec.hostname = "db-0";
    p.spec.subdomain = "db";
  });
  assert.equal(generatePodSandboxConfig(pod, opts).hostname, "db-0");
  pod.spec.setHostnameAsFQDN = true;
  assert.equal(generatePodSandboxConfig(pod, opts).hostname, "db-0.db.prod.svc.cluster.local");
  // The kernel's nodename holds 64 characters; upstream refuses a longer FQDN.
  pod.spec.hostname = "h".repeat(40);
  assert.throws(
    () => generatePodSandboxConfig(pod, opts),
    /FQDN h{40}\.db\.prod\.svc\.cluster\.local is too long \(64 characters is the max, 66 characters requested\)/,
  );
});

Deno.test("generatePodSandboxConfig() cuts a long pod name to 63 characters without a trailing dash", () => {
  const long = basePod((p) => (p.metadata.name = "a".repeat(62) + "-bcd"));
  assert.equal(generatePodSandboxConfig(long).hostname, "a".repeat(62));
});
