/**
 * Settings that were parsed, listed as implemented and then dropped before the
 * runtime manager (tests/unit/implemented_fields_test.ts found them), shown
 * reaching real containers on containerd + runc: `--cgroups-per-qos=false`
 * puts the pod right under `--cgroup-root`, and `--cluster-dns`,
 * `--cluster-domain` and `--resolv-conf` make the resolv.conf the pods see.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestRuntime } from "../harness/mod.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import { type AgentProcess, findPod, startAgent } from "./_agent.ts";
import { waitFor } from "../kit/mod.ts";

function manifest(name: string, image: string, dnsPolicy: string): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: {
      hostNetwork: true,
      dnsPolicy,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: "main", image, imagePullPolicy: "Never", command: ["sleep", "3600"] }],
    },
  });
}

async function read(cri: RuntimeService, id: string, path: string): Promise<string> {
  const out = await cri.execSync(id, ["cat", path], 5);
  assert.equal(out.exitCode, 0, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout);
}

Deno.test({
  name: "cgroupsPerQOS, clusterDNS, clusterDomain and resolvConf reach the pods",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const rt = await startTestRuntime({ name: "settings" });
    const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
    const etc = await Deno.makeTempDir({ prefix: "denolet-resolv-" });
    let agent: AgentProcess | undefined;
    try {
      const resolvConf = join(etc, "resolv.conf");
      await Deno.writeTextFile(resolvConf, "nameserver 192.0.2.53\nsearch example.test\n");
      agent = await startAgent({
        runtime: rt,
        extraArgs: [
          "--cgroups-per-qos=false",
          "--enforce-node-allocatable=",
          "--cluster-dns=192.0.2.10",
          "--cluster-domain=cluster.test",
          `--resolv-conf=${resolvConf}`,
        ],
      });
      const a = agent;
      const image = rt.images.busybox;
      await Deno.writeTextFile(
        join(a.manifestDir, "cluster.json"),
        manifest("cluster", image, "ClusterFirstWithHostNet"),
      );
      await Deno.writeTextFile(
        join(a.manifestDir, "host.json"),
        manifest("host", image, "Default"),
      );
      const running = (name: string) =>
        waitFor(`${name} running`, async () => {
          const cs = findPod(await a.pods(), name)?.status?.containerStatuses?.[0];
          return cs?.state.running ? cs.containerID!.replace("containerd://", "") : undefined;
        }, { timeoutMs: 30_000, log: a.log });
      const clusterId = await running("cluster");
      const hostId = await running("host");

      // cgroupsPerQOS=false: no kubepods/<qos>/pod<uid> level between the root and the container.
      const cgroup = await read(cri, clusterId, "/proc/self/cgroup");
      assert.ok(cgroup.includes(`${rt.cgroupParent}/${clusterId}`), cgroup);
      assert.doesNotMatch(cgroup, /kubepods/);

      // ClusterFirstWithHostNet: the cluster's nameserver and search path, then the host's.
      const clusterResolv = await read(cri, clusterId, "/etc/resolv.conf");
      assert.match(clusterResolv, /^nameserver 192\.0\.2\.10$/m);
      assert.doesNotMatch(clusterResolv, /192\.0\.2\.53/);
      assert.match(
        clusterResolv,
        /^search default\.svc\.cluster\.test svc\.cluster\.test cluster\.test example\.test$/m,
      );
      // Default: the --resolv-conf file's servers and searches.
      const hostResolv = await read(cri, hostId, "/etc/resolv.conf");
      assert.match(hostResolv, /^nameserver 192\.0\.2\.53$/m);
      assert.match(hostResolv, /^search example\.test$/m);
    } finally {
      if (agent) await agent.stop("SIGKILL");
      cri.close();
      await rt.stop();
      await agent?.removeDirs();
      await Deno.remove(etc, { recursive: true });
    }
  },
});
