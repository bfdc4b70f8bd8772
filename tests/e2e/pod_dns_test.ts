/**
 * Pod DNS and the managed /etc/hosts through a real kube-apiserver, shaped as
 * upstream's conformance tests check them (test/e2e/common/node/
 * kubelet_etc_hosts.go "KubeletManagedEtcHosts should test kubelet managed
 * /etc/hosts file" and kubelet.go "with hostAliases should write entries to
 * /etc/hosts"), and the KubeletConfiguration's clusterDNS, clusterDomain and
 * resolvConf reaching a pod's /etc/resolv.conf.
 */

import assert from "node:assert/strict";
import { requireRoot } from "../harness/mod.ts";
import type { Container, Pod } from "../../lib/api/types.ts";
import { waitFor } from "../kit/mod.ts";
import { NODE, startNode } from "./_node.ts";

/** What the conformance test greps a managed hosts file for. */
const MANAGED_PREFIX = "# Kubernetes-managed hosts file.";

Deno.test({
  name:
    "kubelet-managed /etc/hosts, hostAliases and the cluster's DNS settings through the apiserver",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    requireRoot();
    const resolvDir = await Deno.makeTempDir({ prefix: "denolet-e2e-resolv-" });
    const resolvConf = `${resolvDir}/resolv.conf`;
    await Deno.writeTextFile(resolvConf, "nameserver 127.0.0.53\nsearch corp.example\n");
    const node = await startNode({
      name: "poddns",
      config: { clusterDNS: ["10.96.0.10"], clusterDomain: "cluster.local", resolvConf },
    });
    try {
      const { cluster: c, runtime: rt, log } = node;
      const ns = await node.namespace();
      const container = (name: string, mounts: Container["volumeMounts"] = []): Container => ({
        name,
        image: rt.images.busybox,
        imagePullPolicy: "Never",
        command: ["sleep", "3600"],
        volumeMounts: mounts,
      });
      const hostHosts = {
        name: "host-etc-hosts",
        hostPath: { path: "/etc/hosts", type: "FileOrCreate" as const },
      };
      const original = { name: "host-etc-hosts", mountPath: "/etc/hosts-original" };
      const cat = async (pod: string, name: string, path: string) => {
        const res = await c.kubectl(["exec", "-n", ns, pod, "-c", name, "--", "cat", path]);
        assert.equal(
          res.code,
          0,
          `kubectl exec ${pod}/${name} cat ${path}: ${res.stderr}\n${log()}`,
        );
        return res.stdout;
      };
      // The conformance test's check: managed = the prefix, and not the node's file.
      const isManaged = async (pod: string, name: string) => {
        const hosts = await cat(pod, name, "/etc/hosts");
        const orig = await cat(pod, name, "/etc/hosts-original");
        return hosts.startsWith(MANAGED_PREFIX) && hosts !== orig;
      };

      await t.step(
        "KubeletManagedEtcHosts: managed for pod-network containers, not over a container's own /etc/hosts mount, not for host-network pods",
        async () => {
          await node.runPod({
            metadata: { name: "test-pod", namespace: ns },
            spec: {
              nodeName: NODE,
              terminationGracePeriodSeconds: 1,
              containers: [
                container("busybox-1", [original]),
                container("busybox-2", [original]),
                container("busybox-3", [original, {
                  name: "host-etc-hosts",
                  mountPath: "/etc/hosts",
                }]),
              ],
              volumes: [hostHosts],
            },
          });
          await node.runPod({
            metadata: { name: "test-host-network-pod", namespace: ns },
            spec: {
              nodeName: NODE,
              hostNetwork: true,
              terminationGracePeriodSeconds: 1,
              containers: [container("busybox-1", [original]), container("busybox-2", [original])],
              volumes: [hostHosts],
            },
          });
          assert.equal(await isManaged("test-pod", "busybox-1"), true);
          assert.equal(await isManaged("test-pod", "busybox-2"), true);
          assert.equal(await isManaged("test-pod", "busybox-3"), false);
          assert.equal(await isManaged("test-host-network-pod", "busybox-1"), false);
          assert.equal(await isManaged("test-host-network-pod", "busybox-2"), false);
          // The pod's own line: its IP and hostname.
          const pod = await c.kubectlJson<Pod>(["get", "pod", "-n", ns, "test-pod"]);
          const hosts = await cat("test-pod", "busybox-1", "/etc/hosts");
          assert.ok(hosts.endsWith(`\n${pod.status?.podIP}\ttest-pod\n`), hosts);
        },
      );

      await t.step("hostAliases: the pod's log of /etc/hosts has the alias line", async () => {
        const name = "agnhost-host-aliases";
        const res = await c.kubectl(["apply", "-f", "-"], {
          stdin: JSON.stringify({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name, namespace: ns },
            spec: {
              nodeName: NODE,
              restartPolicy: "Never",
              hostAliases: [{ ip: "123.45.67.89", hostnames: ["foo", "bar"] }],
              containers: [{
                name: "etc-hosts",
                image: rt.images.busybox,
                imagePullPolicy: "Never",
                command: ["cat", "/etc/hosts"],
              }],
            },
          }),
        });
        assert.equal(res.code, 0, res.stderr);
        await waitFor("the hostAliases pod Succeeded", async () => {
          const p = await c.kubectlJson<Pod>(["get", "pod", "-n", ns, name]).catch(() => undefined);
          return p?.status?.phase === "Succeeded";
        }, { timeoutMs: 60_000, log });
        const logs = await c.kubectl(["logs", "-n", ns, name]);
        assert.equal(logs.code, 0, logs.stderr);
        assert.ok(logs.stdout.includes("123.45.67.89\tfoo\tbar"), logs.stdout);
      });

      await t.step(
        "clusterDNS, clusterDomain and resolvConf from the config file shape a ClusterFirst pod's resolv.conf",
        async () => {
          await node.runPod({
            metadata: { name: "dns", namespace: ns },
            spec: {
              nodeName: NODE,
              terminationGracePeriodSeconds: 1,
              containers: [container("main")],
            },
          });
          assert.equal(
            await cat("dns", "main", "/etc/resolv.conf"),
            `search ${ns}.svc.cluster.local svc.cluster.local cluster.local corp.example\n` +
              "nameserver 10.96.0.10\noptions ndots:5\n",
          );
        },
      );
    } finally {
      await node.stop();
      await Deno.remove(resolvDir, { recursive: true }).catch(() => {});
    }
  },
});
