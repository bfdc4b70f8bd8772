/**
 * A pod's /etc/resolv.conf and /etc/hosts as its containers see them on a real
 * containerd, for each dnsPolicy: clusterDNS, clusterDomain and resolvConf
 * (here a resolv.conf naming a local stub resolver, 127.0.0.53, which upstream
 * passes through), dnsConfig, hostname/subdomain/setHostnameAsFQDN and
 * hostAliases. Pods on the CNI bridge get no traffic: everything is read with
 * exec. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import { startTestRuntime, type TestRuntime } from "../harness/mod.ts";
import { runPod, testRuntimeManager } from "./_manager.ts";
import { hostNetworkPod, recordingEvents } from "../kit/mod.ts";

const HOST_RESOLV_CONF = "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch corp.example\n";
const MANAGED_LOCAL = "# Kubernetes-managed hosts file.\n" +
  "127.0.0.1\tlocalhost\n" +
  "::1\tlocalhost ip6-localhost ip6-loopback\n" +
  "fe00::0\tip6-localnet\n" +
  "fe00::0\tip6-mcastprefix\n" +
  "fe00::1\tip6-allnodes\n" +
  "fe00::2\tip6-allrouters\n";
const ALIASES = [{ ip: "123.45.67.89", hostnames: ["foo", "bar"] }];
const ALIASES_SECTION = "\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n";

function pod(rt: TestRuntime, name: string, spec: Partial<Pod["spec"]>, containers = 1): Pod {
  return hostNetworkPod(rt.images.busybox, {
    name,
    namespace: "dns",
    containers: Array.from({ length: containers }, (_, i) => ({
      name: `c${i}`,
      command: ["sleep", "3600"],
    })),
    spec: { hostNetwork: false, ...spec },
  });
}

Deno.test({
  name: "pods see /etc/resolv.conf and /etc/hosts as upstream's kubelet forms them, per dnsPolicy",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "poddns" });
    let runtime: RuntimeService | undefined;
    try {
      runtime = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
      const resolvConf = `${rt.dir}/resolv.conf`;
      await Deno.writeTextFile(resolvConf, HOST_RESOLV_CONF);
      const events = recordingEvents();
      const DNS_REASONS = ["DNSConfigForming", "MissingClusterDNS"];
      const dnsEvents = () => events.got.filter((e) => DNS_REASONS.includes(e.reason));
      const cluster = testRuntimeManager(rt, runtime, {
        clusterDNS: ["10.96.0.10"],
        clusterDomain: "cluster.local",
        resolvConf,
        events,
      });

      await t.step(
        "ClusterFirst: cluster nameserver, cluster search paths then the host's, ndots, dnsConfig merged; FQDN hostname; managed hosts with aliases, not over a container's own /etc/hosts",
        async () => {
          const ownHosts = `${rt.dir}/own-hosts`;
          await Deno.writeTextFile(ownHosts, "10.9.9.9\town\n");
          const p = pod(rt, "web-0", {
            dnsPolicy: "ClusterFirst",
            hostname: "web-0",
            subdomain: "web",
            setHostnameAsFQDN: true,
            hostAliases: ALIASES,
            dnsConfig: {
              nameservers: ["10.0.0.11"],
              searches: ["my.domain"],
              options: [{ name: "ndots", value: "2" }, { name: "single-request-reopen" }],
            },
            volumes: [{ name: "own", hostPath: { path: ownHosts, type: "File" } }],
          }, 2);
          p.spec.containers[1]!.volumeMounts = [{ name: "own", mountPath: "/etc/hosts" }];
          const { status, read, cleanup } = await runPod(runtime!, cluster, p);
          assert.equal(
            await read("c0", ["cat", "/etc/resolv.conf"]),
            "search dns.svc.cluster.local svc.cluster.local cluster.local corp.example my.domain\n" +
              "nameserver 10.96.0.10\nnameserver 10.0.0.11\n" +
              "options ndots:2 single-request-reopen\n",
          );
          assert.equal(
            (await read("c0", ["hostname"])).trim(),
            "web-0.web.dns.svc.cluster.local",
          );
          const ip = status.sandboxes[0]!.ip;
          assert.match(ip, /^\d+\.\d+\.\d+\.\d+$/);
          assert.equal(
            await read("c0", ["cat", "/etc/hosts"]),
            `${MANAGED_LOCAL}${ip}\tweb-0.web.dns.svc.cluster.local\tweb-0\n${ALIASES_SECTION}`,
          );
          assert.equal(await read("c1", ["cat", "/etc/hosts"]), "10.9.9.9\town\n");
          assert.deepEqual(dnsEvents(), []);
          await cleanup();
        },
      );

      await t.step(
        "Default: the host's resolv.conf as is, stub nameserver included; over 3 nameservers cut with DNSConfigForming",
        async () => {
          const p = pod(rt, "dflt", {
            dnsPolicy: "Default",
            dnsConfig: { nameservers: ["10.0.0.11", "10.0.0.12", "10.0.0.13"] },
          });
          const { read, cleanup } = await runPod(runtime!, cluster, p);
          assert.equal(
            await read("c0", ["cat", "/etc/resolv.conf"]),
            "search corp.example\n" +
              "nameserver 127.0.0.53\nnameserver 10.0.0.11\nnameserver 10.0.0.12\n" +
              "options edns0 trust-ad\n",
          );
          assert.deepEqual(dnsEvents().map((e) => [e.ref.kind, e.ref.name, e.reason, e.message]), [[
            "Pod",
            "dflt",
            "DNSConfigForming",
            "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 127.0.0.53 10.0.0.11 10.0.0.12",
          ]]);
          events.got.length = 0;
          await cleanup();
        },
      );

      await t.step("None: only the pod's dnsConfig", async () => {
        const p = pod(rt, "none", {
          dnsPolicy: "None",
          dnsConfig: {
            nameservers: ["203.0.113.1"],
            searches: ["my.domain", "second.domain"],
            options: [{ name: "ndots", value: "3" }, { name: "debug" }],
          },
        });
        const { read, cleanup } = await runPod(runtime!, cluster, p);
        assert.equal(
          await read("c0", ["cat", "/etc/resolv.conf"]),
          "search my.domain second.domain\nnameserver 203.0.113.1\noptions ndots:3 debug\n",
        );
        await cleanup();
      });

      await t.step(
        "host network: ClusterFirst falls back to the host's DNS, ClusterFirstWithHostNet gets the cluster's; /etc/hosts is the node's under its own header, plus aliases",
        async () => {
          const nodeHosts = await Deno.readTextFile("/etc/hosts");
          const first = pod(rt, "hostnet", {
            hostNetwork: true,
            dnsPolicy: "ClusterFirst",
            hostAliases: ALIASES,
          });
          const a = await runPod(runtime!, cluster, first);
          assert.equal(
            await a.read("c0", ["cat", "/etc/resolv.conf"]),
            "search corp.example\nnameserver 127.0.0.53\noptions edns0 trust-ad\n",
          );
          assert.equal(
            await a.read("c0", ["cat", "/etc/hosts"]),
            `# Kubernetes-managed hosts file (host network).\n${nodeHosts}${ALIASES_SECTION}`,
          );
          await a.cleanup();
          const withHostNet = pod(rt, "hostnet-cluster", {
            hostNetwork: true,
            dnsPolicy: "ClusterFirstWithHostNet",
          });
          const b = await runPod(runtime!, cluster, withHostNet);
          assert.equal(
            await b.read("c0", ["cat", "/etc/resolv.conf"]),
            "search dns.svc.cluster.local svc.cluster.local cluster.local corp.example\n" +
              "nameserver 10.96.0.10\noptions ndots:5\n",
          );
          await b.cleanup();
        },
      );

      await t.step(
        'no clusterDNS and resolvConf "": ClusterFirst falls back with MissingClusterDNS, to 127.0.0.1 and search "."',
        async () => {
          const bare = testRuntimeManager(rt, runtime!, { resolvConf: "", events });
          const p = pod(rt, "bare", { dnsPolicy: "ClusterFirst" });
          const { read, cleanup } = await runPod(runtime!, bare, p);
          assert.equal(
            await read("c0", ["cat", "/etc/resolv.conf"]),
            "search .\nnameserver 127.0.0.1\n",
          );
          assert.deepEqual(dnsEvents().map((e) => [e.ref.kind, e.reason]), [
            ["Node", "MissingClusterDNS"],
            ["Pod", "MissingClusterDNS"],
          ]);
          await cleanup();
        },
      );
    } finally {
      runtime?.close();
      await rt.stop();
    }
  },
});
