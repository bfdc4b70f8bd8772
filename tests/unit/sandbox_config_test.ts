import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { NamespaceMode, Protocol } from "../../lib/cri/types.ts";
import {
  generatePodSandboxConfig,
  parseResolvConf,
  podCgroupParent,
  podDNSConfig,
  podHostname,
} from "../../lib/kuberuntime/sandbox_config.ts";
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

const hostDNS = { servers: ["10.0.0.2"], searches: ["corp.example"], options: ["ndots:1"] };

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
    "io.kubernetes.container.managed": "true",
  });
  assert.deepEqual(cfg.annotations, { note: "x" });
  assert.equal(
    generatePodSandboxConfig(basePod()).logDirectory,
    "/var/log/pods/prod_web_1234-abcd",
  );
});

Deno.test("podCgroupParent() puts each QoS class where upstream's cgroupfs layout does", () => {
  const opts = { cgroupRoot: "/denolet-test" };
  assert.equal(podCgroupParent(basePod(), opts), "/denolet-test/kubepods/besteffort/pod1234-abcd");
  const burstable = basePod((
    p,
  ) => (p.spec.containers[0]!.resources = { requests: { cpu: "100m" } }));
  assert.equal(podCgroupParent(burstable, opts), "/denolet-test/kubepods/burstable/pod1234-abcd");
  const guaranteed = basePod((p) =>
    p.spec.containers[0]!.resources = { limits: { cpu: "1", memory: "64Mi" } }
  );
  assert.equal(podCgroupParent(guaranteed, opts), "/denolet-test/kubepods/pod1234-abcd");
  assert.equal(podCgroupParent(guaranteed, {}), "/kubepods/pod1234-abcd");
  assert.equal(
    podCgroupParent(burstable, { cgroupDriver: "systemd" }),
    "kubepods-burstable-pod1234_abcd.slice",
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
  assert.deepEqual(cfg.linux?.securityContext?.supplementalGroups, [5, 7]);
});

Deno.test("parseResolvConf() reads servers, the last search line and merged options", () => {
  const conf = parseResolvConf(
    "# comment\nnameserver 1.1.1.1\nnameserver 8.8.8.8 ; x\nsearch a.example.\nsearch b.example c.example .\noptions ndots:2 rotate\noptions ndots:3\n",
  );
  assert.deepEqual(conf, {
    servers: ["1.1.1.1", "8.8.8.8"],
    searches: ["b.example", "c.example"],
    options: ["ndots:3", "rotate"],
  });
});

Deno.test("podDNSConfig() falls back to the host's resolv.conf for ClusterFirst without cluster DNS", () => {
  assert.deepEqual(podDNSConfig(basePod(), { hostDNS }), hostDNS);
  assert.deepEqual(
    podDNSConfig(basePod((p) => (p.spec.dnsPolicy = "Default")), { hostDNS }),
    hostDNS,
  );
});

Deno.test("podDNSConfig() uses cluster DNS and search paths for ClusterFirst when configured", () => {
  const opts = { hostDNS, clusterDNS: ["10.96.0.10"], clusterDomain: "cluster.local" };
  assert.deepEqual(podDNSConfig(basePod(), opts), {
    servers: ["10.96.0.10"],
    searches: ["prod.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"],
    options: ["ndots:5"],
  });
  // Host-network pods only get cluster DNS with ClusterFirstWithHostNet.
  assert.deepEqual(podDNSConfig(basePod((p) => (p.spec.hostNetwork = true)), opts), hostDNS);
  const withHostNet = basePod((p) => {
    p.spec.hostNetwork = true;
    p.spec.dnsPolicy = "ClusterFirstWithHostNet";
  });
  assert.deepEqual(podDNSConfig(withHostNet, opts).servers, ["10.96.0.10"]);
});

Deno.test("podDNSConfig() with None uses only the pod's dnsConfig", () => {
  const pod = basePod((p) => {
    p.spec.dnsPolicy = "None";
    Object.assign(p.spec, {
      dnsConfig: {
        nameservers: ["9.9.9.9"],
        searches: ["x.example"],
        options: [{ name: "ndots", value: "2" }, { name: "edns0" }],
      },
    });
  });
  assert.deepEqual(podDNSConfig(pod, { hostDNS }), {
    servers: ["9.9.9.9"],
    searches: ["x.example"],
    options: ["ndots:2", "edns0"],
  });
});

Deno.test("podHostname() cuts long names to 63 characters without a trailing dash", () => {
  const long = basePod((p) => (p.metadata.name = "a".repeat(62) + "-bcd"));
  assert.equal(podHostname(long), "a".repeat(62));
  assert.equal(podHostname(basePod()), "web");
});
