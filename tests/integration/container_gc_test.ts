/**
 * Container GC against a real containerd (tests/harness): a crash-looping pod
 * keeps only the newest dead container (MaxPerPodContainer 1), whose log
 * `/containerLogs?previous=true` still reads, while the removed ones' log
 * files and /var/log/containers symlinks go with them; a deleted pod loses
 * its containers, its sandbox and its /var/log/pods directory. Then the
 * agent process itself: its GC, a minute after its start, leaves a
 * crash-looping static pod one dead container, which the secure port's
 * `/containerLogs?previous=true` reads (~70 s: the agent's crash-loop backoff
 * and GC period are upstream's), and a finished static pod removed while the
 * agent was down goes once the restarted agent's pods are synced. Host-network
 * pods only. Needs root.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Pod, PodStatus } from "../../lib/api/types.ts";
import { createRuntimeService, type RuntimeService } from "../../lib/cri/mod.ts";
import { ContainerState, PodSandboxState } from "../../lib/cri/types.ts";
import {
  ContainerGC,
  type ContainerInBackoff,
  Labels,
  logSymlinkPath,
  podLogsDirectory,
  type PodStateProvider,
  type RuntimePodStatus,
} from "../../lib/kuberuntime/mod.ts";
import { cleanContainerLogs, containerLogsHandler } from "../../lib/logs/mod.ts";
import { generatePodStatus } from "../../lib/status/mod.ts";
import { BackoffStore } from "../../lib/util/backoff.ts";
import { realClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { requireRoot, startTestRuntime, type TestRuntime } from "../harness/mod.ts";
import { pathExists, waitFor } from "../kit/mod.ts";
import { runPod, testRuntimeManager } from "./_manager.ts";
import { findPod, podManifest, startAgent } from "./_agent.ts";

/** How many times the crash-looping container restarts before the GC runs. */
const RESTARTS = 4;

/** Pod state where only the UIDs in `deleted` are gone (evicted, or deleted and terminated). */
function podState(deleted: string[] = []): PodStateProvider {
  return {
    shouldPodContentBeRemoved: (uid) => deleted.includes(uid),
    shouldPodRuntimeBeRemoved: (uid) => deleted.includes(uid),
  };
}

Deno.test({
  name:
    "Container GC on containerd: a crash loop keeps its newest dead container, a deleted pod goes",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const rt = await startTestRuntime({ name: "cgc" });
    let cri: RuntimeService | undefined;
    try {
      cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
      const runtime = cri;
      const containerLogsDir = `${rt.dir}/containers`; // testRuntimeManager's
      // A short crash-loop backoff, so the restarts take seconds, not minutes.
      const manager = testRuntimeManager(rt, runtime, {
        containerLogsDir,
        backoff: new BackoffStore({ initialMs: 200, maxMs: 500 }),
        cleanContainerLogs,
      });
      const gc = (state: PodStateProvider) =>
        new ContainerGC({
          runtime: manager,
          podState: state,
          sourcesReady: () => true,
          podLogsDir: manager.podLogsDir,
          clock: realClock,
          logger: silentLogger,
        });
      const signal = new AbortController().signal;
      const containersOf = (uid: string) =>
        runtime.listContainers({ labelSelector: { [Labels.podUID]: uid } });
      const sandboxesOf = (uid: string) =>
        runtime.listPodSandbox({ labelSelector: { [Labels.podUID]: uid } });

      const crasher: Pod = {
        metadata: { name: "crasher", namespace: "default", uid: crypto.randomUUID() },
        spec: {
          hostNetwork: true,
          restartPolicy: "Always",
          terminationGracePeriodSeconds: 1,
          volumes: [{
            name: "host",
            hostPath: { path: `${rt.dir}/crasher`, type: "DirectoryOrCreate" },
          }],
          containers: [{
            name: "app",
            image: rt.images.busybox,
            imagePullPolicy: "Never",
            // Each run counts itself in the host dir, says which run it is, and fails.
            command: [
              "sh",
              "-c",
              "n=$(cat /host/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /host/n; echo run-$n; exit 1",
            ],
            volumeMounts: [{ name: "host", mountPath: "/host" }],
          }],
        },
      };
      const crasherUID = crasher.metadata.uid!;

      await t.step(
        "a crash loop keeps MaxPerPodContainer dead containers; --previous reads the last",
        async () => {
          // Sync as the pod workers do until the container has restarted RESTARTS times.
          const crashed: RuntimePodStatus = await waitFor(
            `${RESTARTS} restarts of the crash-looping container`,
            async () => {
              const observed = await manager.getPodStatus(crasherUID);
              const app = observed.containers.filter((c) => c.name === "app");
              if (app.length > RESTARTS && app.every((c) => c.state === "exited")) return observed;
              await manager.syncPod(crasher, observed, signal);
              return undefined;
            },
            { timeoutMs: 120_000, intervalMs: 200 },
          );
          const runs = crashed.containers.length;
          const newest = crashed.containers[0]!;
          const before = await Promise.all(crashed.containers.map(async (c) => ({
            id: c.id,
            logPath: (await runtime.containerStatus(c.id)).status.logPath,
            link: logSymlinkPath(containerLogsDir, crashed, c.name, c.id),
          })));
          for (const c of before) {
            assert.ok(await pathExists(c.logPath), `${c.id}'s log exists before GC`);
            assert.ok(await pathExists(c.link), `${c.id}'s symlink exists before GC`);
          }

          await gc(podState()).garbageCollect();

          const left = await containersOf(crasherUID);
          assert.deepEqual(left.map((c) => c.id), [newest.id], "only the newest dead container");
          assert.equal((await sandboxesOf(crasherUID)).length, 1, "the pod keeps its sandbox");
          for (const c of before) {
            const kept = c.id === newest.id;
            assert.equal(await pathExists(c.logPath), kept, `log file of ${c.id}`);
            assert.equal(await pathExists(c.link), kept, `symlink of ${c.id}`);
          }

          // The status the kubelet reports between two restarts: waiting in
          // CrashLoopBackOff, the newest dead container as the last state.
          const inBackoff: ContainerInBackoff[] = [{
            name: "app",
            reason: "CrashLoopBackOff",
            message: "back-off restarting failed container",
            until: Date.now() + 10_000,
          }];
          const status: PodStatus = generatePodStatus({
            pod: crasher,
            runtime: await manager.getPodStatus(crasherUID),
            inBackoff,
            lastErrors: new Map(),
            now: Date.now(),
          });
          const handler = containerLogsHandler({
            getPodByName: (ns, name) =>
              ns === "default" && name === "crasher" ? { ...crasher, status } : undefined,
            runtime,
          });
          const url = new URL("https://node/containerLogs/default/crasher/app?previous=true");
          const res = await handler(new Request(url), url);
          assert.equal(res.status, 200);
          assert.equal(await res.text(), `run-${runs}\n`);
        },
      );

      await t.step("a deleted pod's containers, sandbox and log directory go", async () => {
        const pod: Pod = {
          metadata: { name: "done", namespace: "default", uid: crypto.randomUUID() },
          spec: {
            hostNetwork: true,
            terminationGracePeriodSeconds: 1,
            containers: [{
              name: "app",
              image: rt.images.busybox,
              imagePullPolicy: "Never",
              command: ["sh", "-c", "echo hello; sleep 1000"],
            }],
          },
        };
        const uid = pod.metadata.uid!;
        const running = await runPod(runtime, manager, pod);
        await manager.killPod(pod, running.status, 0, signal);
        const logDir = podLogsDirectory(manager.podLogsDir, running.status);
        assert.ok(await pathExists(logDir));

        // While the pod still exists, its only dead container and its sandbox stay.
        await gc(podState()).garbageCollect();
        assert.equal((await containersOf(uid)).length, 1);
        assert.equal((await sandboxesOf(uid)).length, 1);
        assert.ok(await pathExists(logDir));

        await gc(podState([uid])).garbageCollect();
        assert.deepEqual(await containersOf(uid), []);
        assert.deepEqual(await sandboxesOf(uid), []);
        assert.ok(!await pathExists(logDir), "its /var/log/pods directory is gone");
        // The crash-looping pod, not deleted, is left as it was.
        assert.equal((await containersOf(crasherUID)).length, 1);
        assert.ok(
          await pathExists(podLogsDirectory(manager.podLogsDir, {
            namespace: "default",
            name: "crasher",
            uid: crasherUID,
          })),
        );
      });

      await manager.killPod(crasher, await manager.getPodStatus(crasherUID), 0, signal);
      await manager.removePod(await manager.getPodStatus(crasherUID), signal);
    } finally {
      cri?.close();
      await rt.stop();
    }
  },
});

/**
 * Runs `fn` with a fresh test runtime and a CRI client for it, both stopped after.
 * @param name the runtime's name
 * @param fn the test, given the runtime and the client
 */
async function withAgentRuntime(
  name: string,
  fn: (rt: TestRuntime, runtime: RuntimeService) => Promise<void>,
): Promise<void> {
  requireRoot();
  const rt = await startTestRuntime({ name });
  const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 30_000 });
  try {
    await fn(rt, cri);
  } finally {
    cri.close();
    await rt.stop();
  }
}

Deno.test({
  name:
    "Container GC in the agent: a crash-looping static pod keeps one dead container, --previous reads it",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: () =>
    withAgentRuntime("cgc-agent", async (rt, runtime) => {
      const agent = await startAgent({ runtime: rt });
      try {
        await Deno.writeTextFile(
          `${agent.manifestDir}/crasher.json`,
          podManifest({
            name: "crasher",
            image: rt.images.busybox,
            command: ["sh", "-c", "echo crashed; exit 1"],
          }),
        );
        const pod = await waitFor(
          "the static pod in /pods",
          async () => findPod(await agent.pods(), "crasher"),
        );
        const uid = pod.metadata.uid!;
        const dead = async () =>
          (await runtime.listContainers({ labelSelector: { [Labels.podUID]: uid } }))
            .filter((c) => c.state === ContainerState.CONTAINER_EXITED);
        // The agent restarts it after its crash-loop backoff, and its GC runs a minute after
        // its start: wait until a dead container the test saw is gone (nothing else removes
        // the containers of a pod that still exists) and one dead container is left.
        const seen = new Set<string>();
        const left = await waitFor(
          "the agent's GC removing the older dead containers",
          async () => {
            const now = await dead();
            const removed = [...seen].filter((id) => !now.some((c) => c.id === id));
            for (const c of now) seen.add(c.id);
            return { removed, now };
          },
          {
            timeoutMs: 150_000,
            intervalMs: 500,
            until: ({ removed, now }) => removed.length > 0 && now.length <= 1,
            log: agent.log,
          },
        );
        assert.equal(left.now.length, 1, "the newest dead container stays");

        // The previous instance's log through the secure port, as `kubectl logs --previous`.
        const lastID = await waitFor(
          "the status naming the last terminated container",
          async () =>
            findPod(await agent.pods(), "crasher")?.status?.containerStatuses?.[0]?.lastState
              ?.terminated?.containerID,
        );
        const ids = (await runtime.listContainers({ labelSelector: { [Labels.podUID]: uid } }))
          .map((c) => c.id);
        assert.ok(ids.includes(lastID.replace(/^[^:]*:\/\//, "")), "GC kept the previous one");
        // The self-signed serving certificate names the node: curl checks it as "testnode".
        const out = await new Deno.Command("curl", {
          args: [
            "-sS",
            "--cacert",
            `${agent.rootDir}/pki/kubelet.crt`,
            "--resolve",
            `testnode:${agent.port}:127.0.0.1`,
            "-w",
            "\n%{http_code}",
            `https://testnode:${agent.port}/containerLogs/default/${pod.metadata.name}/main?previous=true`,
          ],
          stdout: "piped",
          stderr: "piped",
        }).output();
        const text = new TextDecoder().decode(out.stdout);
        assert.ok(out.success, new TextDecoder().decode(out.stderr));
        assert.equal(text, "crashed\n\n200");
      } finally {
        await agent.stop();
        await agent.removeDirs();
      }
    }),
});

Deno.test({
  name:
    "Container GC in the agent: a finished static pod removed while the agent was down is no orphan to stop; the GC removes it",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: () =>
    withAgentRuntime("cgc-exited", async (rt, runtime) => {
      let agent = await startAgent({ runtime: rt });
      try {
        const manifest = `${agent.manifestDir}/finished.json`;
        await Deno.writeTextFile(
          manifest,
          podManifest({
            name: "finished",
            image: rt.images.busybox,
            command: ["sh", "-c", "exit 0"],
            restartPolicy: "Never",
          }),
        );
        const uid = await waitFor("the pod Succeeded", async () => {
          const pod = findPod(await agent.pods(), "finished");
          return pod?.status?.phase === "Succeeded" ? pod.metadata.uid : undefined;
        }, { timeoutMs: 60_000, log: agent.log });
        const held = async () => {
          const selector = { labelSelector: { [Labels.podUID]: uid } };
          const [containers, sandboxes] = await Promise.all([
            runtime.listContainers(selector),
            runtime.listPodSandbox(selector),
          ]);
          return { containers, sandboxes };
        };
        // Its sandbox stopped too: nothing of it runs.
        await waitFor("its sandbox stopped", async () => {
          const { sandboxes } = await held();
          return sandboxes.length > 0 &&
              sandboxes.every((s) => s.state !== PodSandboxState.SANDBOX_READY) || undefined;
        }, { timeoutMs: 30_000, log: agent.log });
        assert.equal((await agent.stop("SIGTERM")).code, 0);
        await Deno.remove(manifest);
        agent = await startAgent({
          runtime: rt,
          manifestDir: agent.manifestDir,
          rootDir: agent.rootDir,
        });
        // Housekeeping (every 2 s) leaves it alone. The GC's run at start precedes the pod
        // workers' first sync, when an unknown pod may not go yet; it runs again on that sync,
        // not a minute later (an agent restarted more often than that never collected it).
        await waitFor("its containers and sandbox removed by the GC", async () => {
          const { containers, sandboxes } = await held();
          return containers.length + sandboxes.length === 0 || undefined;
        }, { timeoutMs: 30_000, intervalMs: 500, log: agent.log });
        assert.doesNotMatch(agent.log(), /Cleaning up orphaned pod.*finished/);
      } finally {
        await agent.stop();
        await agent.removeDirs();
      }
    }),
});
