/**
 * The prober against real containers on a private containerd (tests/harness),
 * with the real clock and 1 s periods: exec probes through CRI ExecSync
 * (startup gating, a readiness flip after `touch`, a timeout), httpGet
 * against busybox httpd and tcpSocket against busybox nc in a host-network
 * pod, and a grpc probe of the pod's (host) IP answered by a health server in
 * this process. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Container } from "../../lib/api/types.ts";
import { startHealthServer } from "../../lib/cri/_health_server.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import { ProbeManager, type ProbeResultUpdate } from "../../lib/prober/mod.ts";
import { realClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { startTestRuntime } from "../harness/mod.ts";
import { freePort, hostNetworkPod, sampleValue, waitFor } from "../kit/mod.ts";
import { testRuntimeManager } from "./_manager.ts";

/** How the prober's results are awaited: real containers and 1 s periods take real time. */
const POLL = { timeoutMs: 20_000, intervalMs: 100 };

/**
 * Whether the container's `type` probe failed at least `n` times, by the probe counter
 * (a failure need not change the cached result: readiness starts failed).
 */
function failedAtLeast(metrics: string, container: string, type: string, n: number): boolean {
  const failed = { container, probe_type: type, result: "failed" };
  return (sampleValue(metrics, "prober_probe_total", failed) ?? 0) >= n;
}

Deno.test({
  name: "ProbeManager probes real containers: exec, httpGet, tcpSocket and grpc",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "probes" });
    let runtime: RuntimeService | undefined;
    let probes: ProbeManager | undefined;
    const health = await startHealthServer({ host: "127.0.0.1" });
    try {
      runtime = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
      const manager = testRuntimeManager(rt, runtime);
      const signal = new AbortController().signal;
      const httpPort = freePort();
      const tcpPort = freePort();
      const closedPort = freePort();
      const fast = { periodSeconds: 1, timeoutSeconds: 1 };
      const containers: Container[] = [
        {
          name: "exec",
          command: ["sleep", "3600"],
          startupProbe: {
            ...fast,
            failureThreshold: 60,
            exec: { command: ["test", "-f", "/tmp/started"] },
          },
          readinessProbe: { ...fast, exec: { command: ["test", "-f", "/tmp/ready"] } },
          livenessProbe: { ...fast, failureThreshold: 1, exec: { command: ["sleep", "5"] } },
        },
        {
          name: "http",
          ports: [{ name: "web", containerPort: httpPort }],
          command: [
            "sh",
            "-c",
            `mkdir -p /www && echo hello > /www/index.html && exec httpd -f -p 127.0.0.1:${httpPort} -h /www`,
          ],
          readinessProbe: { ...fast, httpGet: { port: "web", path: "/index.html" } },
          livenessProbe: {
            ...fast,
            failureThreshold: 1,
            httpGet: { port: httpPort, path: "/missing" },
          },
        },
        {
          name: "tcp",
          command: ["nc", "-ll", "-p", String(tcpPort), "-e", "true"],
          readinessProbe: { ...fast, tcpSocket: { port: tcpPort } },
          livenessProbe: { ...fast, failureThreshold: 1, tcpSocket: { port: closedPort } },
        },
        {
          name: "grpc",
          command: ["sleep", "3600"],
          readinessProbe: { ...fast, grpc: { port: health.port } },
        },
      ];
      const pod = hostNetworkPod(rt.images.busybox, { name: "probed", containers });
      const uid = pod.metadata.uid!;
      const sync = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
      assert.deepEqual(sync.steps.filter((s) => s.error), []);
      const status = await waitFor("the four containers running", () => manager.getPodStatus(uid), {
        until: (s) => s.containers.filter((c) => c.state === "running").length === 4,
        intervalMs: 200,
        timeoutMs: 20_000,
      });
      const id = (name: string) => status.containers.find((c) => c.name === name)!.id;

      probes = new ProbeManager({
        runtime,
        clock: realClock,
        logger: silentLogger,
        hostIP: "127.0.0.1",
      });
      const updates: ProbeResultUpdate[] = [];
      probes.onResult((u) => updates.push(u));
      probes.addPod(pod);
      probes.updateContainers(pod, status);
      const ready = (name: string) => probes!.readiness(uid).get(id(name));

      await t.step(
        "httpGet: a served path makes the container ready, a 404 fails liveness",
        async () => {
          await waitFor("http ready", () => ready("http") === true, POLL);
          await waitFor(
            "http 404",
            () => probes!.liveness(uid).get(id("http")) === "failure",
            POLL,
          );
          const failed = updates.find((u) =>
            u.container === "http" && u.probeType === "Liveness" && u.result === "failure"
          );
          assert.equal(failed?.output, "HTTP probe failed with statuscode: 404");
        },
      );

      await t.step("tcpSocket: an open port is ready, a closed one fails liveness", async () => {
        await waitFor("tcp ready", () => ready("tcp") === true, POLL);
        await waitFor("tcp closed", () => probes!.liveness(uid).get(id("tcp")) === "failure", POLL);
        const failed = updates.find((u) =>
          u.container === "tcp" && u.result === "failure" && u.probeType === "Liveness"
        );
        assert.match(failed?.output ?? "", new RegExp(`^dial tcp 127.0.0.1:${closedPort}: `));
      });

      await t.step("grpc: NOT_SERVING is not ready, SERVING is", async () => {
        health.setStatus("", "NOT_SERVING");
        // A readiness failure changes nothing (it starts failed): watch the counter.
        await waitFor(
          "grpc probed",
          () => failedAtLeast(probes!.renderProbeMetrics(), "grpc", "Readiness", 1),
          POLL,
        );
        assert.equal(ready("grpc"), false);
        health.setStatus("", "SERVING");
        await waitFor("grpc ready", () => ready("grpc") === true, POLL);
        assert.ok(health.userAgents.some((ua) => ua.startsWith("kube-probe/1.34")));
      });

      await t.step(
        "exec: startup gates readiness and liveness until /tmp/started exists",
        async () => {
          await waitFor(
            "two failed exec startup probes",
            () => failedAtLeast(probes!.renderProbeMetrics(), "exec", "Startup", 2),
            POLL,
          );
          assert.equal(probes!.started(uid).get(id("exec")), false);
          assert.equal(ready("exec"), false);
          assert.equal(probes!.liveness(uid).get(id("exec")), "success", "liveness not run yet");
          await runtime!.execSync(id("exec"), ["touch", "/tmp/started"], 5);
          await waitFor("exec started", () => probes!.started(uid).get(id("exec")) === true, POLL);
          assert.equal(probes!.startup(uid).get(id("exec")), "success");
        },
      );

      await t.step("exec: readiness flips from failure to success after touch", async () => {
        await waitFor(
          "a failed exec readiness probe after start-up",
          () => failedAtLeast(probes!.renderProbeMetrics(), "exec", "Readiness", 1),
          POLL,
        );
        assert.equal(ready("exec"), false);
        await runtime!.execSync(id("exec"), ["touch", "/tmp/ready"], 5);
        await waitFor("exec ready", () => ready("exec") === true, POLL);
        const flip = updates.filter((u) => u.container === "exec" && u.probeType === "Readiness");
        assert.deepEqual(flip.map((u) => u.result), ["failure", "success"]);
      });

      await t.step(
        "exec: a command that outlives timeoutSeconds fails liveness as timed out",
        async () => {
          await waitFor("exec timeout", () => probes!.liveness(uid).get(id("exec")) === "failure", {
            ...POLL,
            timeoutMs: 30_000,
          });
          const failed = updates.find((u) =>
            u.container === "exec" && u.probeType === "Liveness" && u.result === "failure"
          );
          assert.equal(failed?.output, `command "sleep 5" timed out`);
        },
      );

      await t.step("/metrics/probes counts the probes and removePod stops them", async () => {
        const text = probes!.renderProbeMetrics();
        assert.match(
          text,
          /prober_probe_total\{container="http",namespace="default",pod="probed",pod_uid="[^"]+",probe_type="Readiness",result="successful"\} \d+/,
        );
        assert.match(
          text,
          /prober_probe_total\{container="exec",[^}]*probe_type="Startup",result="failed"\} \d+/,
        );
        probes!.removePod(uid);
        await probes!.settled();
        assert.equal(probes!.workerCount, 0);
        assert.equal(probes!.renderProbeMetrics(), "");
        await manager.killPod(pod, await manager.getPodStatus(uid), 0, signal);
        await manager.removePod(await manager.getPodStatus(uid), signal);
      });
    } finally {
      probes?.stop();
      await health.close();
      runtime?.close();
      await rt.stop();
    }
  },
});
