/**
 * Probes and sidecars through the whole agent (sync loop, prober, planner,
 * status) on a real containerd + runc.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestRuntime } from "../harness/mod.ts";
import { createRuntimeService } from "../../lib/cri/mod.ts";
import type { Container, Pod } from "../../lib/api/types.ts";
import { type AgentProcess, findPod, startAgent } from "./_agent.ts";
import { sampleValue, shellExec, waitFor } from "../kit/mod.ts";

function manifest(name: string, containers: Container[], initContainers: Container[] = []): string {
  const pod: Pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: { hostNetwork: true, terminationGracePeriodSeconds: 1, containers, initContainers },
  };
  return JSON.stringify(pod);
}

Deno.test({
  name: "agent drives probes and sidecars on real containerd",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "probes" });
    const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
    let agent: AgentProcess | undefined;
    try {
      agent = await startAgent({ runtime: rt });
      const a = agent;
      const image = rt.images.busybox;
      const sh = (cmd: string) => ["sh", "-c", cmd];
      const status = async (pod: string, container: string) =>
        findPod(await a.pods(), pod)?.status?.containerStatuses?.find((c) => c.name === container);
      const execIn = async (pod: string, container: string, cmd: string) => {
        const id = (await status(pod, container))!.containerID!.replace("containerd://", "");
        const r = await cri.execSync(id, sh(cmd), 5);
        assert.equal(r.exitCode, 0, new TextDecoder().decode(r.stderr));
      };

      await Deno.writeTextFile(
        join(a.manifestDir, "probed.json"),
        manifest("probed", [
          {
            name: "gated",
            image,
            imagePullPolicy: "Never",
            command: sh("trap 'exit 0' TERM; while true; do sleep 0.2; done"),
            startupProbe: {
              ...shellExec("test -f /tmp/started"),
              periodSeconds: 1,
              failureThreshold: 60,
            },
            readinessProbe: { ...shellExec("test -f /tmp/ready"), periodSeconds: 1 },
          },
          {
            name: "lively",
            image,
            imagePullPolicy: "Never",
            command: sh("trap 'exit 0' TERM; while true; do sleep 0.2; done"),
            livenessProbe: {
              ...shellExec("test ! -f /tmp/dead"),
              periodSeconds: 1,
              failureThreshold: 1,
            },
          },
        ]),
      );

      await t.step("a startup probe gates started and ready; readiness flips Ready", async () => {
        await waitFor(
          "gated running",
          async () => (await status("probed", "gated"))?.state.running,
          { timeoutMs: 30_000, log: a.log },
        );
        await waitFor("two failed startup probes of gated", async () => {
          const text = await (await fetch(`http://127.0.0.1:${a.readOnlyPort}/metrics/probes`))
            .text();
          const failed = { container: "gated", probe_type: "Startup", result: "failed" };
          return (sampleValue(text, "prober_probe_total", failed) ?? 0) >= 2;
        }, { timeoutMs: 15_000, log: a.log });
        let gated = (await status("probed", "gated"))!;
        assert.equal(gated.started, false, "not started before its startup probe passes");
        assert.equal(gated.ready, false);
        await execIn("probed", "gated", "touch /tmp/started");
        await waitFor(
          "gated started",
          async () => (await status("probed", "gated"))?.started || undefined,
          { timeoutMs: 15_000, log: a.log },
        );
        gated = (await status("probed", "gated"))!;
        assert.equal(gated.ready, false, "readiness still failing");
        await execIn("probed", "gated", "touch /tmp/ready");
        const pod = await waitFor("pod Ready", async () => {
          const p = findPod(await a.pods(), "probed");
          return p?.status?.conditions?.find((c) => c.type === "Ready")?.status === "True"
            ? p
            : undefined;
        }, { timeoutMs: 15_000, log: a.log });
        assert.equal(
          pod.status?.conditions?.find((c) => c.type === "ContainersReady")?.status,
          "True",
        );
        await execIn("probed", "gated", "rm /tmp/ready");
        await waitFor("pod not Ready again", async () => {
          const p = findPod(await a.pods(), "probed");
          return p?.status?.conditions?.find((c) => c.type === "Ready")?.status === "False" ||
            undefined;
        }, { timeoutMs: 15_000, log: a.log });
      });

      await t.step("a failing liveness probe restarts the container", async () => {
        const before = (await status("probed", "lively"))!;
        assert.equal(before.restartCount, 0);
        await execIn("probed", "lively", "touch /tmp/dead");
        const after = await waitFor("lively restarted", async () => {
          const s = await status("probed", "lively");
          return s && s.restartCount >= 1 && s.state.running ? s : undefined;
        }, { timeoutMs: 30_000, log: a.log });
        assert.notEqual(after.containerID, before.containerID);
        assert.ok(after.lastState.terminated, "the killed instance is lastState");
        // Upstream's Killing message for a liveness kill (the event, logged without an apiserver).
        assert.ok(
          a.log().split("\n").some((l) =>
            l.includes('"Event occurred"') && l.includes('reason="Killing"') &&
            l.includes("Container lively failed liveness probe, will be restarted")
          ),
          "no Killing event with the liveness message",
        );
        const metrics = await (await fetch(`http://127.0.0.1:${a.readOnlyPort}/metrics/probes`))
          .text();
        assert.match(
          metrics,
          /prober_probe_total\{[^}]*probe_type="Liveness"[^}]*result="failed"[^}]*\} [1-9]/,
        );
        assert.match(
          metrics,
          /prober_probe_total\{[^}]*probe_type="Readiness"[^}]*result="successful"[^}]*\} [1-9]/,
        );
      });

      await t.step("a sidecar starts before the app and keeps running beside it", async () => {
        await Deno.writeTextFile(
          join(a.manifestDir, "sidecar.json"),
          manifest(
            "with-sidecar",
            [{ name: "app", image, imagePullPolicy: "Never", command: sh("sleep 3600") }],
            [
              { name: "setup", image, imagePullPolicy: "Never", command: sh("true") },
              {
                name: "proxy",
                image,
                imagePullPolicy: "Never",
                restartPolicy: "Always",
                command: sh("trap 'exit 0' TERM; while true; do sleep 0.2; done"),
              },
            ],
          ),
        );
        const pod = await waitFor("app and sidecar running", async () => {
          const p = findPod(await a.pods(), "with-sidecar");
          const app = p?.status?.containerStatuses?.find((c) => c.name === "app");
          const proxy = p?.status?.initContainerStatuses?.find((c) => c.name === "proxy");
          return app?.state.running && proxy?.state.running ? p : undefined;
        }, { timeoutMs: 30_000, log: a.log });
        const setup = pod.status?.initContainerStatuses?.find((c) => c.name === "setup");
        assert.equal(setup?.state.terminated?.reason, "Completed");
        assert.equal(pod.status?.phase, "Running");
        assert.equal(pod.status?.conditions?.find((c) => c.type === "Initialized")?.status, "True");
        const proxyStarted = Date.parse(
          pod.status!.initContainerStatuses!.find((c) => c.name === "proxy")!.state.running!
            .startedAt!,
        );
        const appStarted = Date.parse(
          pod.status!.containerStatuses!.find((c) => c.name === "app")!.state.running!.startedAt!,
        );
        assert.ok(proxyStarted <= appStarted, "the sidecar started first");
      });
    } finally {
      if (agent) await agent.stop("SIGKILL");
      cri.close();
      await rt.stop();
      await agent?.removeDirs();
    }
  },
});
