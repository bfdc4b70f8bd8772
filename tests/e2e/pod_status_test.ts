/**
 * Pod status through a real kube-apiserver, as upstream's Conformance tests
 * check it: a readiness gate's condition patched through the status
 * subresource decides Ready and is kept by the kubelet's own writes
 * (readiness gate tests); activeDeadlineSeconds set by an update fails a
 * running pod with DeadlineExceeded ("Pods should allow activeDeadlineSeconds
 * to be updated"); a failed container's log becomes its termination message
 * (runtime.go, FallbackToLogsOnError); status.observedGeneration and each
 * kubelet condition's follow metadata.generation through spec updates
 * ("pod generation should start at 1 and increment per update").
 */

import assert from "node:assert/strict";
import { requireRoot } from "../harness/mod.ts";
import type { Pod, PodCondition, PodSpec } from "../../lib/api/types.ts";
import { waitFor } from "../kit/mod.ts";
import { busyboxPod, NODE, startNode } from "./_node.ts";

const GATE = "example.com/feature-1";

Deno.test({
  name:
    "pod status via the apiserver: readiness gates, activeDeadlineSeconds, termination messages",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    requireRoot();
    const node = await startNode({ name: "podstatus" });
    try {
      const { cluster: c, runtime: rt, log } = node;
      const ns = await node.namespace();
      const sleeper = (name: string, spec: Partial<PodSpec> = {}): Pod =>
        busyboxPod(rt, name, ns, { spec });
      const getPod = (name: string) => c.kubectlJson<Pod>(["get", "pod", "-n", ns, name]);
      const condition = (pod: Pod, type: string): PodCondition | undefined =>
        pod.status?.conditions?.find((x) => x.type === type);
      const patchStatus = async (name: string, status: "True" | "False") => {
        const res = await c.kubectl([
          ...["patch", "pod", "-n", ns, name, "--subresource=status", "--type=strategic"],
          "-p",
          JSON.stringify({ status: { conditions: [{ type: GATE, status }] } }),
        ]);
        assert.equal(res.code, 0, `kubectl patch --subresource=status: ${res.stderr}`);
      };

      await t.step("a readiness gate holds Ready False until its condition is True", async () => {
        await node.runPod(sleeper("gated", { readinessGates: [{ conditionType: GATE }] }));
        const waiting = await waitFor("Ready False for the gate", () => getPod("gated"), {
          timeoutMs: 30_000,
          log,
          until: (p) => condition(p, "Ready")?.reason === "ReadinessGatesNotReady",
        });
        assert.equal(condition(waiting, "ContainersReady")?.status, "True");
        assert.equal(condition(waiting, "Ready")?.status, "False");
        assert.equal(
          condition(waiting, "Ready")?.message,
          `corresponding condition of pod readiness gate "${GATE}" does not exist.`,
        );

        await patchStatus("gated", "False");
        const stillWaiting = await waitFor(
          "Ready's message names the False gate",
          () => getPod("gated"),
          {
            timeoutMs: 30_000,
            log,
            until: (p) => (condition(p, "Ready")?.message ?? "").includes("is not"),
          },
        );
        assert.equal(
          condition(stillWaiting, "Ready")?.message,
          `the status of pod readiness gate "${GATE}" is not "True", but False`,
        );

        await patchStatus("gated", "True");
        const ready = await waitFor("Ready True", () => getPod("gated"), {
          timeoutMs: 30_000,
          log,
          until: (p) => condition(p, "Ready")?.status === "True",
        });
        // The kubelet's write of Ready kept the gate's condition, which it does not own.
        assert.equal(condition(ready, GATE)?.status, "True");

        await patchStatus("gated", "False");
        const unready = await waitFor("Ready False again", () => getPod("gated"), {
          timeoutMs: 30_000,
          log,
          until: (p) => condition(p, "Ready")?.status === "False",
        });
        assert.equal(condition(unready, "Ready")?.reason, "ReadinessGatesNotReady");
        assert.equal(condition(unready, GATE)?.status, "False");
        assert.equal(unready.status?.phase, "Running");
      });

      await t.step("observedGeneration follows each spec update's generation", async () => {
        await node.runPod(sleeper("generation"));
        const observed = (p: Pod) => [
          p.status?.observedGeneration,
          ...(p.status?.conditions ?? []).map((x) => x.observedGeneration),
        ];
        const first = await waitFor("observedGeneration 1", () => getPod("generation"), {
          timeoutMs: 30_000,
          log,
          until: (p) => p.status?.observedGeneration === 1,
        });
        assert.equal(first.metadata.generation, 1);
        assert.ok(observed(first).every((g) => g === 1), JSON.stringify(first.status));
        const res = await c.kubectl([
          ...["patch", "pod", "-n", ns, "generation", "--type=merge"],
          ...["-p", JSON.stringify({ spec: { tolerations: [{ key: "k", operator: "Exists" }] } })],
        ]);
        assert.equal(res.code, 0, `kubectl patch: ${res.stderr}`);
        const second = await waitFor("observedGeneration 2", () => getPod("generation"), {
          timeoutMs: 20_000,
          log,
          until: (p) => p.status?.observedGeneration === 2,
        });
        assert.equal(second.metadata.generation, 2);
        assert.ok(observed(second).every((g) => g === 2), JSON.stringify(second.status));
      });

      await t.step("activeDeadlineSeconds set by an update fails the pod on time", async () => {
        await node.runPod(sleeper("deadline"));
        const res = await c.kubectl([
          ...["patch", "pod", "-n", ns, "deadline", "--type=merge"],
          ...["-p", JSON.stringify({ spec: { activeDeadlineSeconds: 5 } })],
        ]);
        assert.equal(res.code, 0, `kubectl patch: ${res.stderr}`);
        const patchedAt = Date.now();
        const failed = await waitFor("the pod Failed", () => getPod("deadline"), {
          timeoutMs: 60_000,
          log,
          until: (p) => p.status?.phase === "Failed",
        });
        assert.equal(failed.status?.reason, "DeadlineExceeded");
        assert.equal(
          failed.status?.message,
          "Pod was active on the node longer than the specified deadline",
        );
        assert.ok(Date.now() - patchedAt < 30_000, "failed within the deadline and a few ticks");
        const stopped = await waitFor("its container terminated", () => getPod("deadline"), {
          timeoutMs: 30_000,
          log,
          until: (p) => p.status?.containerStatuses?.[0]?.state.terminated !== undefined,
        });
        assert.equal(stopped.status?.containerStatuses?.[0]?.restartCount, 0);
        assert.equal(condition(stopped, "Ready")?.status, "False");
      });

      await t.step("FallbackToLogsOnError: a failed container's log is its message", async () => {
        const apply = await c.kubectl(["apply", "-f", "-"], {
          stdin: JSON.stringify({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "termination-message", namespace: ns },
            spec: {
              nodeName: NODE,
              restartPolicy: "Never",
              containers: [{
                name: "termination-message-container",
                image: rt.images.busybox,
                imagePullPolicy: "Never",
                command: ["/bin/sh", "-c"],
                args: ["/bin/echo -n DONE; /bin/false"],
                terminationMessagePath: "/dev/termination-log",
                terminationMessagePolicy: "FallbackToLogsOnError",
              }],
            },
          }),
        });
        assert.equal(apply.code, 0, apply.stderr);
        const failed = await waitFor("the pod Failed", () => getPod("termination-message"), {
          timeoutMs: 60_000,
          log,
          until: (p) => p.status?.phase === "Failed",
        });
        const terminated = failed.status?.containerStatuses?.[0]?.state.terminated;
        assert.equal(terminated?.exitCode, 1);
        assert.equal(terminated?.message, "DONE");
      });
    } finally {
      await node.stop();
    }
  },
});
