/**
 * The standalone agent end to end on a real containerd + runc: static pods
 * from a manifest directory, as a user runs them.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startTestRuntime } from "../harness/mod.ts";
import { createRuntimeService } from "../../lib/cri/mod.ts";
import type { Pod } from "../../lib/api/types.ts";
import type { NodePageData } from "../../lib/ui/mod.ts";
import { type AgentProcess, findPod, podManifest, startAgent } from "./_agent.ts";
import { waitFor } from "../kit/mod.ts";

function containerStatus(pod: Pod | undefined, name = "main") {
  return pod?.status?.containerStatuses?.find((c) => c.name === name);
}

function running(pod: Pod | undefined, name = "main"): boolean {
  return containerStatus(pod, name)?.state.running !== undefined;
}

Deno.test({
  name: "agent runs static pods on real containerd through their whole life",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "agent" });
    const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
    let agent: AgentProcess | undefined;
    let first: AgentProcess | undefined;
    try {
      agent = first = await startAgent({ runtime: rt });
      const a = agent;
      const write = (file: string, text: string) =>
        Deno.writeTextFile(join(a.manifestDir, file), text);
      const busybox = rt.images.busybox;

      await t.step(
        "a static pod starts and reports Running with upstream's status shape",
        async () => {
          await write(
            "web.yaml",
            podManifest({ name: "web", image: busybox, command: ["sleep", "3600"] }),
          );
          const pod = await waitFor("web running", async () => {
            const p = findPod(await a.pods(), "web");
            return running(p) && p?.status?.phase === "Running" ? p : undefined;
          }, { timeoutMs: 30_000, log: a.log });
          const cs = containerStatus(pod)!;
          assert.equal(cs.restartCount, 0);
          assert.match(cs.containerID ?? "", /^containerd:\/\/[0-9a-f]{64}$/);
          assert.equal(cs.ready, true);
          const ready = pod.status?.conditions?.find((c) => c.type === "Ready");
          assert.equal(ready?.status, "True");
          assert.equal(pod.metadata.annotations?.["kubernetes.io/config.source"], "file");
          // Upstream's default masked and read-only paths reach runc.
          const id = cs.containerID!.replace("containerd://", "");
          const mounts = await cri.execSync(id, ["cat", "/proc/self/mountinfo"], 5);
          const mountinfo = new TextDecoder().decode(mounts.stdout);
          assert.match(mountinfo, /\/null \/proc\/keys /, "/proc/keys is masked");
          assert.match(mountinfo, / \/proc\/sys ro,/, "/proc/sys is read-only");
          const [code, body] = await a.healthz();
          assert.equal(code, 200, body);
        },
      );

      await t.step("stats and metrics endpoints serve the running pod", async () => {
        const base = `http://127.0.0.1:${a.readOnlyPort}`;
        const summary = await waitFor("web in /stats/summary with cpu and memory", async () => {
          const s = await (await fetch(`${base}/stats/summary`)).json();
          const web = s.pods?.find((p: { podRef: { name: string } }) =>
            p.podRef.name === "web-testnode"
          );
          const main = web?.containers?.find((c: { name: string }) => c.name === "main");
          return main?.cpu?.usageCoreNanoSeconds !== undefined &&
              main?.memory?.workingSetBytes > 0
            ? s
            : undefined;
        }, { timeoutMs: 30_000, log: a.log });
        assert.equal(summary.node.nodeName, "testnode");
        assert.ok(summary.node.cpu.usageCoreNanoSeconds > 0);
        assert.ok(summary.node.memory.workingSetBytes > 0);
        const resource = await (await fetch(`${base}/metrics/resource`)).text();
        assert.match(
          resource,
          /container_memory_working_set_bytes\{container="main",namespace="default",pod="web-testnode"\} \d+/,
        );
        assert.match(resource, /node_cpu_usage_seconds_total \d/);
        const cadvisor = await (await fetch(`${base}/metrics/cadvisor`)).text();
        assert.match(cadvisor, /container_memory_rss\{[^}]*pod="web-testnode"/);
        // The container runs one process: pids.current counts at least it.
        assert.match(
          cadvisor,
          /container_threads\{container="main",[^}]*pod="web-testnode"\} [1-9]/,
        );
        const own = await (await fetch(`${base}/metrics`)).text();
        assert.match(own, /kubelet_pleg_relist_duration_seconds_count \d+/);
        assert.match(own, /kubelet_running_pods \d+/);
        assert.match(own, /kubelet_runtime_operations_total\{operation_type="run_podsandbox"\} 1/);
        assert.match(own, /kubelet_pod_start_sli_duration_seconds_count 1/);
      });

      await t.step(
        "a bad manifest is rejected with its file and reason; others run; fixing it runs it",
        async () => {
          await write(
            "bad.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers: []\n",
          );
          await write(
            "good.yaml",
            podManifest({ name: "good", image: busybox, command: ["sleep", "3600"] }),
          );
          await waitFor(
            "good running",
            async () => running(findPod(await a.pods(), "good")) || undefined,
            { timeoutMs: 30_000, log: a.log },
          );
          await waitFor("bad.yaml error logged", () => /bad\.yaml/.test(a.log()) || undefined, {
            timeoutMs: 10_000,
            log: a.log,
          });
          assert.match(a.log(), /bad\.yaml[^\n]*spec\.containers: Required value/);
          assert.equal(findPod(await a.pods(), "bad"), undefined);
          await write(
            "bad.yaml",
            podManifest({ name: "bad", image: busybox, command: ["sleep", "3600"] }),
          );
          await waitFor(
            "fixed pod running",
            async () => running(findPod(await a.pods(), "bad")) || undefined,
            { timeoutMs: 30_000, log: a.log },
          );
          assert.ok(running(findPod(await a.pods(), "web")), "web kept running");
        },
      );

      await t.step("a crashing container is restarted with CrashLoopBackOff", async () => {
        await write(
          "crash.yaml",
          podManifest({
            name: "crash",
            image: busybox,
            command: ["sh", "-c", "sleep 0.2; exit 3"],
          }),
        );
        const pod = await waitFor("crash in CrashLoopBackOff", async () => {
          const p = findPod(await a.pods(), "crash");
          const cs = containerStatus(p);
          return cs?.state.waiting?.reason === "CrashLoopBackOff" && cs.restartCount >= 1
            ? p
            : undefined;
        }, { timeoutMs: 40_000, log: a.log });
        const cs = containerStatus(pod)!;
        assert.equal(cs.lastState.terminated?.exitCode, 3);
        assert.match(
          cs.state.waiting?.message ?? "",
          /back-off \d+s restarting failed container=main pod=crash-testnode_default\(/,
        );
      });

      await t.step(
        "OnFailure does not restart success; Never does not restart failure",
        async () => {
          await write(
            "ok.yaml",
            podManifest({
              name: "onfailure-ok",
              image: busybox,
              command: ["true"],
              restartPolicy: "OnFailure",
            }),
          );
          await write(
            "never.yaml",
            podManifest({
              name: "never-fail",
              image: busybox,
              command: ["sh", "-c", "exit 2"],
              restartPolicy: "Never",
            }),
          );
          await write(
            "onf.yaml",
            podManifest({
              name: "onfailure-fail",
              image: busybox,
              command: ["sh", "-c", "exit 4"],
              restartPolicy: "OnFailure",
            }),
          );
          const ok = await waitFor("onfailure-ok Succeeded", async () => {
            const p = findPod(await a.pods(), "onfailure-ok");
            return p?.status?.phase === "Succeeded" ? p : undefined;
          }, { timeoutMs: 30_000, log: a.log });
          assert.equal(containerStatus(ok)?.restartCount, 0);
          assert.equal(containerStatus(ok)?.state.terminated?.reason, "Completed");
          const never = await waitFor("never-fail Failed", async () => {
            const p = findPod(await a.pods(), "never-fail");
            return p?.status?.phase === "Failed" ? p : undefined;
          }, { timeoutMs: 30_000, log: a.log });
          assert.equal(containerStatus(never)?.restartCount, 0);
          assert.equal(containerStatus(never)?.state.terminated?.exitCode, 2);
          await waitFor("onfailure-fail restarted", async () => {
            const cs = containerStatus(findPod(await a.pods(), "onfailure-fail"));
            return (cs?.restartCount ?? 0) >= 1 || undefined;
          }, { timeoutMs: 30_000, log: a.log });
        },
      );

      await t.step("editing a manifest replaces the pod; removing one cleans it up", async () => {
        const before = findPod(await a.pods(), "good")!;
        await write(
          "good.yaml",
          podManifest({ name: "good", image: busybox, command: ["sleep", "7200"] }),
        );
        const after = await waitFor("good replaced", async () => {
          const p = findPod(await a.pods(), "good");
          return p && p.metadata.uid !== before.metadata.uid && running(p) ? p : undefined;
        }, { timeoutMs: 40_000, log: a.log });
        assert.notEqual(after.metadata.uid, before.metadata.uid);
        await waitFor("old good sandbox removed", async () => {
          const sandboxes = await cri.listPodSandbox({
            labelSelector: { "io.kubernetes.pod.uid": before.metadata.uid! },
          });
          return sandboxes.length === 0 || undefined;
        }, { timeoutMs: 40_000, log: a.log });

        await Deno.remove(join(a.manifestDir, "crash.yaml"));
        const crash = await waitFor(
          "crash gone from /pods",
          async () => findPod(await a.pods(), "crash") ? undefined : true,
          { timeoutMs: 20_000, log: a.log },
        );
        assert.ok(crash);
        await waitFor("crash containers removed", async () => {
          const cs = await cri.listContainers({
            labelSelector: { "io.kubernetes.pod.name": "crash-testnode" },
          });
          return cs.length === 0 || undefined;
        }, { timeoutMs: 40_000, log: a.log });
      });

      await t.step(
        "deletion honours the grace period: SIGTERM, then SIGKILL after it",
        async () => {
          await write(
            "stubborn.yaml",
            podManifest({
              name: "stubborn",
              image: busybox,
              command: ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"],
              grace: 3,
            }),
          );
          await write(
            "polite.yaml",
            podManifest({
              name: "polite",
              image: busybox,
              command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"],
              grace: 30,
            }),
          );
          await waitFor("both running", async () => {
            const pods = await a.pods();
            return running(findPod(pods, "stubborn")) && running(findPod(pods, "polite")) ||
              undefined;
          }, { timeoutMs: 30_000, log: a.log });
          const start = Date.now();
          await Deno.remove(join(a.manifestDir, "stubborn.yaml"));
          await Deno.remove(join(a.manifestDir, "polite.yaml"));
          const gone = (name: string) => async () => {
            const cs = await cri.listContainers({
              labelSelector: { "io.kubernetes.pod.name": `${name}-testnode` },
              state: { state: 1 },
            });
            return cs.length === 0 ? Date.now() - start : undefined;
          };
          const politeMs = await waitFor("polite stopped", gone("polite"), {
            timeoutMs: 20_000,
            log: a.log,
          });
          const stubbornMs = await waitFor("stubborn stopped", gone("stubborn"), {
            timeoutMs: 20_000,
            log: a.log,
          });
          assert.ok(
            politeMs < 3_000 + 2_500,
            `polite pod took ${politeMs} ms; it exits on SIGTERM`,
          );
          assert.ok(
            stubbornMs >= 3_000,
            `stubborn pod was killed after ${stubbornMs} ms, before its 3s grace period`,
          );
          assert.ok(stubbornMs < 3_000 + 4_000, `stubborn pod took ${stubbornMs} ms to be killed`);
        },
      );

      await t.step(
        "a runtime that is down makes the node NotReady, not /healthz fail; the agent stays up and recovers",
        async () => {
          const ready = async () => {
            const resp = await fetch(`http://127.0.0.1:${a.readOnlyPort}/ui/data`);
            const data = await resp.json() as NodePageData;
            return data.node.conditions.find((c) => c.type === "Ready");
          };
          await rt.restart(async () => {
            // Down once 30 s pass without an answer (upstream's maxWaitForContainerRuntime).
            const down = await waitFor("the node NotReady with the runtime down", async () => {
              const c = await ready();
              return c?.status === "False" ? c : undefined;
            }, { timeoutMs: 50_000, log: a.log });
            assert.match(down.message, /container runtime is down/);
            // Upstream's /healthz checks the sync loop only: the runtime is not its business.
            const [code, body] = await a.healthz();
            assert.equal(code, 200, `/healthz ${code} with the runtime down: ${body}`);
          });
          await waitFor(
            "the node Ready again",
            async () => (await ready())?.status === "True" || undefined,
            { timeoutMs: 30_000, log: a.log },
          );
          const web = findPod(await a.pods(), "web");
          assert.ok(running(web), "web still running after the runtime came back");
          assert.equal(containerStatus(web)!.restartCount, 0);
        },
      );

      await t.step(
        "SIGKILL and restart: running containers are adopted; removed manifests are cleaned",
        async () => {
          await write(
            "keep.yaml",
            podManifest({ name: "keep", image: busybox, command: ["sleep", "3600"] }),
          );
          await write(
            "drop.yaml",
            podManifest({ name: "drop", image: busybox, command: ["sleep", "3600"] }),
          );
          const before = await waitFor("keep and drop running", async () => {
            const pods = await a.pods();
            const keep = findPod(pods, "keep");
            return running(keep) && running(findPod(pods, "drop")) ? keep : undefined;
          }, { timeoutMs: 30_000, log: a.log });
          const keepID = containerStatus(before)!.containerID;
          const webID = containerStatus(findPod(await a.pods(), "web"))!.containerID;
          await a.stop("SIGKILL");
          await Deno.remove(join(a.manifestDir, "drop.yaml"));
          agent = await startAgent({ runtime: rt, manifestDir: a.manifestDir, rootDir: a.rootDir });
          const b = agent;
          const keep = await waitFor("keep reported after restart", async () => {
            const p = findPod(await b.pods(), "keep");
            return running(p) ? p : undefined;
          }, { timeoutMs: 30_000, log: b.log });
          assert.equal(containerStatus(keep)!.containerID, keepID, "keep's container was adopted");
          assert.equal(containerStatus(keep)!.restartCount, 0);
          const web = await waitFor("web reported", async () => {
            const p = findPod(await b.pods(), "web");
            return running(p) ? p : undefined;
          }, { timeoutMs: 30_000, log: b.log });
          assert.equal(containerStatus(web)!.containerID, webID, "web's container was adopted");
          await waitFor("drop cleaned up", async () => {
            const cs = await cri.listContainers({
              labelSelector: { "io.kubernetes.pod.name": "drop-testnode" },
            });
            return cs.length === 0 || undefined;
          }, { timeoutMs: 40_000, log: b.log });
        },
      );

      await t.step("SIGTERM stops the agent and leaves pods running", async () => {
        const b = agent!;
        const status = await b.stop("SIGTERM");
        assert.equal(status.code, 0, b.log().split("\n").slice(-20).join("\n"));
        const cs = await cri.listContainers({
          labelSelector: { "io.kubernetes.pod.name": "web-testnode" },
          state: { state: 1 },
        });
        assert.equal(cs.length, 1);
        agent = undefined;
      });
    } finally {
      if (agent) await agent.stop("SIGKILL");
      cri.close();
      await rt.stop();
      await first?.removeDirs();
    }
  },
});
