/**
 * Joining like `kubeadm join`: denolet starts with a bootstrap kubeconfig (a
 * bootstrap token) and no kubeconfig, requests its client certificate through a
 * CertificateSigningRequest that kube-controller-manager auto-approves and signs
 * with the cluster CA, writes it under --cert-dir and the kubeconfig pointing at
 * it, registers and runs pods; with rotateCertificates it renews the certificate
 * before it expires, without a restart.
 */

import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { requireRoot } from "../harness/mod.ts";
import type { Lease, Node } from "../../lib/api/cluster_types.ts";
import { waitFor } from "../kit/mod.ts";
import { NODE, startNode } from "./_node.ts";

interface Csr {
  metadata: { name: string };
  spec: { signerName: string; usages: string[]; username: string };
  status?: { conditions?: { type: string }[] };
}

Deno.test({
  name: "TLS bootstrap: a node joins from a bootstrap kubeconfig alone and runs a pod",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    requireRoot();
    const node = await startNode({ name: "bootstrap", bootstrap: true });
    try {
      const { cluster: c, runtime: rt, scratch, agent } = node;
      // The client CSR: upstream's name, signer, usages, requested by the token's user, approved.
      const csrs = await c.kubectlJson<{ items: Csr[] }>(["get", "csr"]);
      const client = csrs.items.find((x) =>
        x.spec.signerName === "kubernetes.io/kube-apiserver-client-kubelet"
      );
      assert.ok(client, JSON.stringify(csrs.items));
      assert.match(client.metadata.name, /^node-csr-[A-Za-z0-9_-]{43}$/);
      assert.deepEqual(client.spec.usages, ["digital signature", "client auth"]);
      assert.match(client.spec.username, /^system:bootstrap:[a-z0-9]{6}$/);
      assert.ok(client.status?.conditions?.some((x) => x.type === "Approved"));

      // The file store: a dated pair and the current symlink; the kubeconfig names it.
      const pki = `${agent.rootDir}/pki`;
      const current = `${pki}/kubelet-client-current.pem`;
      assert.ok(Deno.lstatSync(current).isSymlink);
      assert.match(Deno.readLinkSync(current), /kubelet-client-\d{4}(-\d\d){5}\.pem$/);
      assert.equal(Deno.statSync(current).mode! & 0o777, 0o600);
      const pem = Deno.readTextFileSync(current);
      const leaf = new X509Certificate(pem);
      assert.match(leaf.subject, /O=system:nodes/);
      assert.match(leaf.subject, new RegExp(`CN=system:node:${NODE}`));
      assert.ok(leaf.verify(new X509Certificate(Deno.readTextFileSync(c.caFile)).publicKey));
      assert.match(pem, /-----BEGIN EC PRIVATE KEY-----/);
      const kubeconfig = Deno.readTextFileSync(`${scratch}/kubelet.kubeconfig`);
      assert.match(kubeconfig, new RegExp(`client-certificate: ${current}`));
      assert.match(kubeconfig, new RegExp(`client-key: ${current}`));
      assert.ok(!kubeconfig.includes("token"), kubeconfig);

      // The Node is Ready (startNode waited); it runs a pod.
      const ns = await node.namespace();
      await node.runPod({
        metadata: { name: "joined", namespace: ns },
        spec: {
          nodeName: NODE,
          terminationGracePeriodSeconds: 1,
          containers: [{
            name: "main",
            image: rt.images.busybox,
            imagePullPolicy: "Never",
            command: ["sleep", "3600"],
          }],
        },
      });

      // A restart finds the kubeconfig valid and requests nothing new.
      await node.restartAgent();
      await waitFor("node Ready after the restart", async () => {
        const n = await c.kubectlJson<Node>(["get", "node", NODE]).catch(() => undefined);
        return n?.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True");
      }, { timeoutMs: 60_000, log: node.log });
      const after = await c.kubectlJson<{ items: Csr[] }>(["get", "csr"]);
      assert.equal(after.items.length, csrs.items.length, node.log());
    } finally {
      await node.stop();
    }
  },
});

Deno.test({
  name:
    "client certificate rotation: short-lived certificates renewed twice, Node Ready, Lease renewed",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    requireRoot();
    // The signer backdates by 5 min: a 2 min certificate lives 7 min and is renewed
    // 0–80 s after it was issued (70–90% of its life).
    const node = await startNode({
      name: "rotation",
      bootstrap: true,
      cluster: { tlsBootstrap: { signingDuration: "2m" } },
      config: { rotateCertificates: true },
    });
    try {
      const { cluster: c, agent, log } = node;
      const current = `${agent.rootDir}/pki/kubelet-client-current.pem`;
      const serial = () => new X509Certificate(Deno.readTextFileSync(current)).serialNumber;
      const first = new X509Certificate(Deno.readTextFileSync(current));
      const seen = new Set([first.serialNumber]);
      await waitFor("two renewals of the client certificate", () => {
        seen.add(serial());
        return seen.size >= 3 ? true : undefined;
      }, { timeoutMs: 240_000, intervalMs: 1000, log });
      // Past the first certificate's end, the node still talks with a newer one.
      const firstEnd = Date.parse(first.validTo);
      const restarts = async () => {
        const pods = await c.kubectlJson<
          { items: { status?: { containerStatuses?: { restartCount: number }[] } }[] }
        >(["get", "pods", "-A"]);
        return pods.items.flatMap((p) => p.status?.containerStatuses ?? []).reduce(
          (n, s) => n + s.restartCount,
          0,
        );
      };
      assert.equal(await restarts(), 0);
      const lease = await c.kubectlJson<Lease>(["get", "lease", "-n", "kube-node-lease", NODE]);
      await waitFor("a Lease renewal with the renewed certificate", async () => {
        const now = await c.kubectlJson<Lease>(["get", "lease", "-n", "kube-node-lease", NODE]);
        return now.spec?.renewTime !== lease.spec?.renewTime ? true : undefined;
      }, { timeoutMs: 30_000, log });
      const ready = await c.kubectlJson<Node>(["get", "node", NODE]);
      assert.ok(
        ready.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"),
        log(),
      );
      assert.ok(firstEnd > 0);
      assert.match(log(), /Certificate rotation: new certificate in use/);
    } finally {
      await node.stop();
    }
  },
});
