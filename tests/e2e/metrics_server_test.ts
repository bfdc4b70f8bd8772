/**
 * metrics-server scraping denolet: the apiserver's aggregation layer forwards
 * `metrics.k8s.io` to a real metrics-server, which scrapes `/metrics/resource`
 * on denolet's secure port over TLS (verifying denolet's self-signed serving
 * certificate against the CA beside it in kubelet.crt) with a client
 * certificate that denolet authenticates and authorizes through
 * SubjectAccessReview; `kubectl top node` and `kubectl top pod` show numbers.
 */

import assert from "node:assert/strict";
import { requireRoot } from "../harness/mod.ts";
import { waitFor } from "../kit/mod.ts";
import { type MetricsServer, startMetricsServer } from "./_metrics_server.ts";
import { NODE, startNode } from "./_node.ts";

/** The certificates of a PEM bundle, in order. */
function pemCerts(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n?/g) ?? [];
}

/** The rows of `kubectl top` output (header dropped), split on whitespace. */
function rows(stdout: string): string[][] {
  return stdout.trim().split("\n").slice(1).map((line) => line.trim().split(/\s+/));
}

Deno.test({
  name: "metrics-server scrapes denolet over TLS: kubectl top node and kubectl top pod",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    requireRoot();
    // Neither the apiserver's aggregator nor its node proxy dials loopback: startNode's
    // node IP is a test host's address.
    const node = await startNode({ name: "ms", cluster: { aggregation: true } });
    let ms: MetricsServer | undefined;
    try {
      const { cluster: c, runtime: rt, agent: a, scratch } = node;
      // The self-signed kubelet.crt carries its own CA after the leaf: that CA is what
      // metrics-server verifies the serving certificate with.
      const certs = pemCerts(await Deno.readTextFile(`${a.rootDir}/pki/kubelet.crt`));
      assert.equal(certs.length, 2, "kubelet.crt holds the leaf and its CA");
      const kubeletCa = `${scratch}/kubelet-ca.crt`;
      await Deno.writeTextFile(kubeletCa, certs[1]!);
      ms = await startMetricsServer(c, { address: node.nodeIP, kubeletCaFile: kubeletCa });
      const m = ms;
      const logs = () => `--- metrics-server:\n${m.log()}\n--- denolet:\n${a.log()}`;

      const ns = `e2e-${crypto.randomUUID().slice(0, 8)}`;
      assert.equal((await c.kubectl(["create", "namespace", ns])).code, 0);
      const created = await c.kubectl(["apply", "-f", "-"], {
        stdin: JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "sleeper", namespace: ns },
          spec: {
            nodeName: NODE,
            terminationGracePeriodSeconds: 1,
            automountServiceAccountToken: false,
            containers: [{
              name: "main",
              image: rt.images.busybox,
              imagePullPolicy: "Never",
              command: ["sleep", "3600"],
            }],
          },
        }),
      });
      assert.equal(created.code, 0, created.stderr);

      // metrics-server reports CPU as a rate, so a node or pod shows after two scrapes.
      const nodeRow = await waitFor("kubectl top node shows the node", async () => {
        const res = await c.kubectl(["top", "node"]);
        return res.code === 0 ? rows(res.stdout).find((r) => r[0] === NODE) : undefined;
      }, { timeoutMs: 120_000, log: logs });
      // NAME CPU(cores) CPU(%) MEMORY(bytes) MEMORY(%)
      const [, cpu, cpuPct, mem, memPct] = nodeRow;
      assert.match(cpu ?? "", /^\d+m$/, `node CPU: ${nodeRow.join(" ")}`);
      assert.match(cpuPct ?? "", /^\d+%$/, `node CPU%: ${nodeRow.join(" ")}`);
      assert.match(mem ?? "", /^\d+Mi$/, `node memory: ${nodeRow.join(" ")}`);
      assert.match(memPct ?? "", /^\d+%$/, `node memory%: ${nodeRow.join(" ")}`);
      assert.ok(parseInt(mem!) > 0, `the node's working set is above 0: ${nodeRow.join(" ")}`);

      const podRow = await waitFor("kubectl top pod shows the pod", async () => {
        const res = await c.kubectl(["top", "pod", "-n", ns]);
        return res.code === 0 ? rows(res.stdout).find((r) => r[0] === "sleeper") : undefined;
      }, { timeoutMs: 120_000, log: logs });
      // NAME CPU(cores) MEMORY(bytes)
      assert.match(podRow[1] ?? "", /^\d+m$/, `pod CPU: ${podRow.join(" ")}`);
      assert.match(podRow[2] ?? "", /^\d+Mi$/, `pod memory: ${podRow.join(" ")}`);

      // The raw API: the pod's working set in bytes (kubectl rounds a sleep's to 0Mi).
      const podMetrics = JSON.parse(
        (await c.kubectl([
          ...["get", "--raw", `/apis/metrics.k8s.io/v1beta1/namespaces/${ns}/pods/sleeper`],
        ])).stdout,
      ) as { containers: { name: string; usage: { cpu: string; memory: string } }[] };
      assert.deepEqual(podMetrics.containers.map((x) => x.name), ["main"]);
      assert.match(podMetrics.containers[0]!.usage.memory, /^[1-9]\d*(Ki|Mi)?$/);
    } finally {
      await ms?.stop().catch(() => {});
      await node.stop();
    }
  },
});
